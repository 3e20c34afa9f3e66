package xent

import (
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// EmitAliased emits variant p of shape s with the gradient written over
// the logits (the gradient kernel's output is the buffer logits) and,
// with late, z[label] read by the gradient kernel from the logits.
func EmitAliased(s variants.Shape, p variants.Params, late bool) (kernels.Program, error) {
	sh, pv, err := kernels.DecodeVariant[Shape, Params](s, p)
	if err != nil {
		return kernels.Program{}, err
	}
	if err := (family{}).Space(sh).Space().Check(p); err != nil {
		return kernels.Program{}, err
	}
	g := newGeom(sh, pv)
	g.alias, g.labelLate = true, late
	return family{}.emit(g)
}

// EmitPlanted emits variant p of shape s with a planted bug: in the
// one-pass kernel "unsynced" (no barrier between publishing the CTAs'
// statistics and merging them), "nowait" (the part read before its bulk
// copy has completed), "prevstep" (copy=stream's step read after waiting
// on the step before's barrier) or "nofence" (the gradient bulk-stored
// without the threads' proxy fence); in either, "nolabel" (the label's element left
// with the loop's off-label term).
func EmitPlanted(s variants.Shape, p variants.Params, bug string) (kernels.Program, error) {
	sh, pv, err := kernels.DecodeVariant[Shape, Params](s, p)
	if err != nil {
		return kernels.Program{}, err
	}
	g := newGeom(sh, pv)
	g.plant = bug
	return family{}.emit(g)
}

// OnePassShared is the one-pass kernel's shared memory of variant p of
// shape s as the rules count it (onePassShared) and as emitted: its
// static arrays plus its part.
func OnePassShared(s variants.Shape, p variants.Params) (counted, emitted int, err error) {
	sh, pv, err := kernels.DecodeVariant[Shape, Params](s, p)
	if err != nil {
		return 0, 0, err
	}
	g := newGeom(sh, pv)
	k := ptx.NewModule().Func("one")
	emitOnePass(k, g)
	return g.onePassShared(), k.StaticSharedBytes() + g.cv*g.vb, nil
}
