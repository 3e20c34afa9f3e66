package gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// syncKernel is the build state of a sync-path kernel: a CTA of 4 or 8
// warps computes a BM×BN tile of C (each warp a tm×tn part of it, in
// m16n8k16 blocks) from a cp.async ring of stages A and B tiles.
type syncKernel struct {
	k      *ptx.Func
	g      problem
	p      Params
	wm, wn int         // warp grid
	tm, tn int         // warp tile
	aBytes int         // one A tile in shared memory; the B tile follows it
	stage  int         // bytes of one stage
	w      hopper.Warp // the thread's warp (set by body)
}

func (sk *syncKernel) threads() int { return 128 * sk.p.Consumers }

// emitSync writes the sync path's program.
func emitSync(s Shape, g problem, p Params) (kernels.Program, error) {
	m := ptx.NewModule()
	sk := newSyncKernel(m.Func(entry(s, "sync")), g, p)
	sk.body()
	var red string
	if p.SplitK > 1 {
		red = entry(s, "reduce")
		emitReduce(m.Func(red), g, p.SplitK, false)
	}
	mod, err := m.Build()
	if err != nil {
		return kernels.Program{}, fmt.Errorf("building: %w", err)
	}
	prog := kernels.Program{PTX: mod.String(), RuntimeDims: []string{tokenDim}}
	main := kernels.Launch{Entry: entry(s, "sync"), Grid: [3]configs.Expr{tilesExpr(g, p).TimesInt(p.SplitK), configs.Int(1), configs.Int(1)},
		Block: [3]int{sk.threads(), 1, 1}, SharedBytes: smemBytes(g, p, p.Stages)}
	out := g.out
	if p.SplitK > 1 {
		out = workspace
		prog.Buffers = []kernels.Buffer{workspaceBuffer(g, p.SplitK)}
		splitRuntime(&prog, g, p.BM, p.BN, p.SplitK)
	}
	main.Args = []kernels.Arg{{Buffer: g.a.buf}, {Buffer: g.b.buf}, {Buffer: out}, g.mArg()}
	prog.Launches = append(prog.Launches, main)
	if p.SplitK > 1 {
		prog.Launches = append(prog.Launches, reduceLaunch(red, g, false))
	}
	return prog, nil
}

// entry is the name of one of the family's kernels.
func entry(s Shape, what string) string {
	return fmt.Sprintf("%s_%s_%s_%v", name, s.Grad, what, s.DType)
}

func newSyncKernel(k *ptx.Func, g problem, p Params) *syncKernel {
	sk := &syncKernel{k: k, g: g, p: p}
	sk.wm, sk.wn = syncWarps(p)
	sk.tm, sk.tn = p.BM/sk.wm, p.BN/sk.wn
	sk.aBytes = p.BM * p.BK * 2
	sk.stage = sk.aBytes + p.BK*p.BN*2
	k.ReqNTid(sk.threads())
	return sk
}
