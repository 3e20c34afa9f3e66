package rows

import (
	"fmt"

	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/variants"
)

// Rules are the constraints every row family shares, over the geometry
// of a family's params at shape s. Each lists (variants.Rule.Axes) the
// row axes its outcome derives from and those Geom divides by (vec, vpt,
// rows, rpg), so that the walk checks it as soon as they have their
// values; the others' stale values change no part of Geom it reads.
func Rules[P RowParams](c Config, s Shape) []variants.Rule[P] {
	checks := []struct {
		name  string
		check func(Geom) error
		axes  []string
	}{
		{"vec divides n", c.checkVec, []string{"store"}},
		{"vpt leaves no chunk idle", c.checkVPT, []string{"store"}},
		{"block size", c.checkBlock, nil},
		{"registers held", checkHeld, []string{"unroll", "prefetch", "store", "maxnreg"}},
		{"unroll", checkUnroll, []string{"unroll", "prefetch", "store"}},
		{"enough CTAs", checkCTAs, nil},
		{"shared memory", checkSmem, []string{"unroll", "store"}},
		{"cp.async sizes", checkAsyncSizes, []string{"store"}},
	}
	out := make([]variants.Rule[P], len(checks))
	for i, ch := range checks {
		axes := append([]string{"vec", "vpt", "rows", "rpg"}, ch.axes...)
		out[i] = variants.Rule[P]{Name: ch.name, Check: func(p P) error { return ch.check(c.Geom(s, p.Row())) }, Axes: axes}
	}
	return out
}

// checkVec: vec divides n and is the widest width that does (or, for a
// Narrow family with store=regs, half that).
func (c Config) checkVec(g Geom) error {
	widest := WidestVec(g.DType, g.N)
	if g.N%g.Vec != 0 {
		return fmt.Errorf("vec=%d does not divide n=%d", g.Vec, g.N)
	}
	if 2*g.Vec < widest || g.Vec < widest && !c.Narrow {
		more := ""
		if c.Narrow {
			more = " by more than half"
		}
		return fmt.Errorf("vec=%d is narrower than the widest width dividing n (%d)%s", g.Vec, widest, more)
	}
	if g.Vec < widest && g.Store != StoreRegs {
		return fmt.Errorf("vec=%d narrower than %d with store=%s (narrow vectors only hold more of a row in registers)", g.Vec, widest, g.Store)
	}
	return nil
}

// checkVPT: every point is a distinct split (no chunk of a one-tile row
// idle), and only families and stores that walk tiles get several.
func (c Config) checkVPT(g Geom) error {
	if g.Tiles == 1 && gen.CeilDiv(g.NV, g.TPR) != g.VPT {
		return fmt.Errorf("vpt=%d with %d threads per row: %d vectors need only %d per thread", g.VPT, g.TPR, g.NV, gen.CeilDiv(g.NV, g.TPR))
	}
	if g.Tiles > 1 && !c.Tiles {
		return fmt.Errorf("a row of %d vectors needs %d tiles of %d×%d; %s needs it in one", g.NV, g.Tiles, g.TPR, g.VPT, c.Name)
	}
	if g.Tiles > 1 && (g.Store == StoreRegs || g.Store == StoreAsync) {
		return fmt.Errorf("store=%s holds the row in one tile; %d vectors need %d tiles of %d×%d", g.Store, g.NV, g.Tiles, g.TPR, g.VPT)
	}
	return nil
}

// checkBlock: whole warps, at least 64 threads (or one row group's), at
// most the family's BlockMax (or one row group's).
func (c Config) checkBlock(g Geom) error {
	hi := max(c.BlockMax, g.TPR)
	lo := min(64, max(32, g.TPR))
	if g.Block < lo || g.Block > hi || g.Block%32 != 0 {
		return fmt.Errorf("%d rows × %d threads per row = %d threads per CTA (want %d..%d, whole warps)", g.Rows, g.TPR, g.Block, lo, hi)
	}
	return nil
}

// checkHeld: at most MaxHeld row values held at once; a register cap only
// where CapHeld or more are held in registers.
func checkHeld(g Geom) error {
	held := 2 * g.VPT * g.Vec
	if g.Store == StoreRegs {
		held *= g.Unroll
	}
	if g.Prefetch {
		held *= 2
	}
	if held > MaxHeld {
		return fmt.Errorf("%d row values per thread held at once (at most %d)", held, MaxHeld)
	}
	if g.MaxNReg > 0 && (g.Store != StoreRegs || held < CapHeld) {
		return fmt.Errorf("maxnreg=%d for a variant holding %d row values (a cap is tried from %d held in registers)", g.MaxNReg, held, CapHeld)
	}
	return nil
}

// checkUnroll: unroll and prefetch only with store=regs; unroll divides
// rpg; prefetch pipelines single rows, two or more per group.
func checkUnroll(g Geom) error {
	if g.Unroll > 1 && g.Store != StoreRegs {
		return fmt.Errorf("unroll=%d with store=%s (only regs unrolls rows)", g.Unroll, g.Store)
	}
	if g.RPG%g.Unroll != 0 {
		return fmt.Errorf("unroll=%d does not divide rpg=%d", g.Unroll, g.RPG)
	}
	if g.Prefetch && (g.Store != StoreRegs || g.Unroll != 1 || g.RPG < 2) {
		return fmt.Errorf("prefetch with store=%s, unroll=%d, rpg=%d (it pipelines single rows held in registers, two or more per group)", g.Store, g.Unroll, g.RPG)
	}
	return nil
}

// checkCTAs: at least min(MinCTAs, ⌈m/16⌉) CTAs.
func checkCTAs(g Geom) error {
	if want := min(MinCTAs, gen.CeilDiv(g.M, 16)); g.Grid < want {
		return fmt.Errorf("%d rows × %d per group: %d CTAs for %d rows (want at least %d)", g.Rows, g.RPG, g.Grid, g.M, want)
	}
	return nil
}

// checkSmem: MaxAsyncSmem for store=async, MaxRowSmem for the others.
func checkSmem(g Geom) error {
	if g.Store == StoreAsync && g.Smem > MaxAsyncSmem {
		return fmt.Errorf("%d bytes of shared memory for %d rows in flight per group (at most %d)", g.Smem, g.RPG, MaxAsyncSmem)
	}
	if g.Store != StoreAsync && g.Smem > MaxRowSmem {
		return fmt.Errorf("%d bytes of shared memory (at most %d)", g.Smem, MaxRowSmem)
	}
	return nil
}

// checkAsyncSizes: cp.async copies 4, 8 or 16 bytes.
func checkAsyncSizes(g Geom) error {
	if g.Store == StoreAsync && g.VB < 4 {
		return fmt.Errorf("store=async with %d-byte vectors (cp.async copies 4, 8 or 16 bytes)", g.VB)
	}
	return nil
}
