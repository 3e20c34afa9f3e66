package linxent

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// blockReduce combines one value per thread over the CTA: a butterfly in
// each warp, lane 0 of each warp into a shared slot, one barrier, and
// every thread combines the slots in warp order, so all threads agree.
// Each reduction has its own slots: no barrier is needed between them.
type blockReduce struct {
	k      *ptx.Func
	lane0  ptx.Reg
	warp   ptx.Reg
	warps  int
	arrays int
}

func newBlockReduce(k *ptx.Func, tid ptx.Reg, block int) *blockReduce {
	return &blockReduce{k: k, lane0: k.Setp("eq", ptx.U32, k.And(ptx.U32, tid, ptx.Imm(31)), ptx.Imm(0)),
		warp: k.Shr(ptx.U32, tid, ptx.Imm(5)), warps: block / 32}
}

func (r *blockReduce) max(v ptx.Reg) ptx.Reg {
	return r.reduce(v, func(a, b ptx.Reg) ptx.Reg { return r.k.Max(ptx.F32, a, b) })
}

func (r *blockReduce) sum(v ptx.Reg) ptx.Reg {
	return r.reduce(v, func(a, b ptx.Reg) ptx.Reg { return r.k.Add(ptx.F32, a, b) })
}

func (r *blockReduce) reduce(v ptx.Reg, op func(a, b ptx.Reg) ptx.Reg) ptx.Reg {
	k := r.k
	v = butterfly(k, v, warpLanes, op)
	r.arrays++
	slots := k.Mov(ptx.U32, k.SharedArray("warps"+string(rune('0'+r.arrays)), ptx.F32, r.warps, 16))
	k.St(ptx.Shared, ptx.F32, ptx.At(k.Mad(ptx.U32, r.warp, ptx.Imm(4), slots), 0), []ptx.Reg{v})
	k.Guard(r.lane0, false)
	k.BarSync(0)
	return gen.Tree(gen.LdF32(k, ptx.Shared, ptx.At(slots, 0), r.warps, ptx.Reg{}), op)
}

// butterfly combines v with op across the lanes at the xor distances
// offs, in that order (shfl.sync.bfly over the whole warp): every lane
// of each group the distances span ends with the group's result.
func butterfly(k *ptx.Func, v ptx.Reg, offs []int64, op func(a, b ptx.Reg) ptx.Reg) ptx.Reg {
	for _, off := range offs {
		v = op(v, k.BitsToF32(k.ShflSync("bfly", v, ptx.Imm(off), ptx.Imm(31), 0xffffffff)))
	}
	return v
}

// warpLanes are a whole warp's distances; quadLanes the four threads of
// a wgmma accumulator row's.
var (
	warpLanes = []int64{16, 8, 4, 2, 1}
	quadLanes = []int64{1, 2}
)
