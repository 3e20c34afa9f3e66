package sim_test

import (
	"encoding/binary"
	"testing"

	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
)

// TestSpinOnLowerCTAs: CTAs start in index order, so a CTA may spin on a
// global flag that a lower-numbered CTA raises, with one worker or
// several. A chain of 24 CTAs: each but the first waits for its
// predecessor's flag (atom.acquire.gpu.exch 0, which also clears it),
// stores the predecessor's value plus one and raises its own flag
// (red.release.gpu.add).
func TestSpinOnLowerCTAs(t *testing.T) {
	const n = 24
	m := ptx.NewModule()
	k := m.Func("chain")
	v := k.Cvta(ptx.Global, k.LdParam(k.Param("v", ptx.U64)))
	f := k.Cvta(ptx.Global, k.LdParam(k.Param("f", ptx.U64)))
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	vp := k.Add(ptx.U64, v, k.MulWide(ptx.U32, cta, ptx.Imm(4)))
	fp := k.Add(ptx.U64, f, k.MulWide(ptx.U32, cta, ptx.Imm(4)))
	prev := k.Mov(ptx.U32, ptx.Imm(0))
	k.If(k.Setp("ne", ptx.U32, cta, ptx.Imm(0)), func() {
		k.While(func() ptx.Reg {
			old := k.Atom(ptx.Global, "exch", ptx.B32, ptx.At(fp, -4), ptx.Imm(0), ptx.AtomOpts{Sem: "acquire"})
			return k.Setp("eq", ptx.B32, old, ptx.Imm(0))
		}, func() {})
		k.MovTo(prev, k.Ld(ptx.Global, ptx.U32, 1, ptx.At(vp, -4))[0])
	})
	k.St(ptx.Global, ptx.U32, ptx.At(vp, 0), []ptx.Reg{k.Add(ptx.U32, prev, ptx.Imm(1))})
	k.Red(ptx.Global, "add", ptx.U32, ptx.At(fp, 0), ptx.Imm(1), ptx.AtomOpts{Sem: "release"})
	b, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 4} {
		be := sim.New(sim.Options{Workers: workers})
		mod, err := be.Load(b.String())
		if err != nil {
			t.Fatal(err)
		}
		fn, err := mod.Function("chain")
		if err != nil {
			t.Fatal(err)
		}
		var ptrs []runner.Ptr
		for range 2 {
			p, err := be.Alloc(4 * n)
			if err != nil {
				t.Fatal(err)
			}
			if err := be.Memset(p, 0, 4*n); err != nil {
				t.Fatal(err)
			}
			ptrs = append(ptrs, p)
		}
		if err := be.Launch(fn, [3]int{n, 1, 1}, [3]int{1, 1, 1}, 0, []any{ptrs[0], ptrs[1]}); err != nil {
			t.Fatal(err)
		}
		if err := be.Sync(); err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		for i, p := range ptrs {
			out := make([]byte, 4*n)
			if err := be.Download(out, p); err != nil {
				t.Fatal(err)
			}
			for j := range n {
				got, want := binary.LittleEndian.Uint32(out[4*j:]), uint32(j+1)
				if i == 1 {
					want = map[bool]uint32{true: 1}[j == n-1] // every flag cleared but the last
				}
				if got != want {
					t.Errorf("%d workers: buffer %d [%d] = %d, want %d", workers, i, j, got, want)
				}
			}
		}
	}
}
