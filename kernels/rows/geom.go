package rows

import (
	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
)

// Dim is the row kernels' runtime dim: the row count m, the row kernel's
// last parameter (u32): the PTX is the same at every value of it, and
// the program's sizes are expressions of it.
const Dim = "m"

// DimArg is the launch argument of the row count, passed after the row
// kernel's others.
var DimArg = configs.Arg{Scalar: configs.Var(Dim), Type: configs.U32}

// MaxRowSmem bounds the dynamic shared memory of a row variant: two CTAs
// fit in an SM of sm_80 (164 KiB) and sm_90 (228 KiB).
const MaxRowSmem = 96 << 10

// MaxAsyncSmem bounds the dynamic shared memory of a store=async variant:
// one CTA in an SM of sm_90 (227 KiB of the 228 may go to one CTA).
const MaxAsyncSmem = 227 << 10

// MaxHeld bounds the f32 row values a thread holds at once (vpt·vec per
// tensor, two tensors, unroll rows, twice with prefetch).
const MaxHeld = 64

// CapHeld is the fewest row values held in registers (store=regs) for
// which a register cap is offered.
const CapHeld = 32

// MinCTAs is the fewest CTAs offered when the rows allow it (and at least
// m/16).
const MinCTAs = 128

// MaxTPR is the most threads a row group may have.
const MaxTPR = 1024

// Store is where a row is kept between its reduction and its output pass.
type Store string

// The row stores.
const (
	StoreRegs   Store = "regs"   // registers: one pass over global memory
	StoreReread Store = "reread" // loaded again from global memory
	StoreSmem   Store = "smem"   // raw words in a thread-private shared-memory slice
	StoreAsync  Store = "async"  // every row of the group copied to shared memory with cp.async first
)

// Params are the row axes of a variant, as a family's params struct
// gives them (see RowParams).
type Params struct {
	Vec, VPT, Rows, RPG, Unroll int
	Prefetch                    bool
	Store                       Store
	MaxNReg                     int
}

// RowParams is a family's params struct seen through its row axes.
type RowParams interface{ Row() Params }

// Config describes one row family's kernel.
type Config struct {
	Name     string
	MinTPR   int  // fewest threads per row group
	BlockMax int  // largest CTA (a row group alone may be larger)
	Tiles    bool // rows longer than one tile are allowed (reread, smem)
	Narrow   bool // half the widest vector width is allowed (store=regs)
	Sums     int  // values reduced per row
	Cols     int  // column sums kept per thread (shared memory to combine the row groups)
}

// Geom is the work split and shared-memory layout of one variant. M and
// Grid are the values at the shape it was derived for, which the rules
// judge; a program uses the row count parameter and GridExpr instead.
type Geom struct {
	M, N     int
	DType    dtype.DType
	Vec      int // elements per vector access
	VB       int // bytes per vector
	NV       int // vectors per row: n/vec
	VPT      int // vectors per thread per tile
	TPR      int // threads per row group
	Rows     int // row groups per CTA
	Block    int // threads per CTA
	RPG      int // rows per group
	Unroll   int // rows loaded together
	Prefetch bool
	Tiles    int // tiles per row
	Grid     int // CTAs
	Store    Store
	MaxNReg  int

	// Dynamic shared memory (byte offsets, 16-byte aligned): reduction
	// slots (two buffers of redBuf bytes), the stash, the row groups'
	// column sums; Smem is the total.
	redOff, redBuf     int
	stashOff, stashLen int
	CombOff, CombLen   int
	Smem               int
	nq                 int // values reduced per row batch
	wp                 int // reduction slots per value: warps per row, padded to 4
}

// VecValues are the vector widths offered for dt: up to 16 bytes.
func VecValues(dt dtype.DType) []int {
	if dt.Size() == 2 {
		return []int{1, 2, 4, 8}
	}
	return []int{1, 2, 4}
}

// WidestVec is the widest offered vector width that divides n.
func WidestVec(dt dtype.DType, n int) int {
	w := 1
	for _, v := range VecValues(dt) {
		if n%v == 0 {
			w = v
		}
	}
	return w
}

// TPRFor derives the threads per row group and the tiles per row from the
// vectors per row and per thread.
func TPRFor(nv, vpt, minTPR int) (tpr, tiles int) {
	t := gen.CeilDiv(nv, vpt)
	switch {
	case t > MaxTPR:
		tpr = MaxTPR
	case t <= 32:
		tpr = max(minTPR, gen.Pow2Ceil(t))
	default:
		tpr = gen.CeilDiv(t, 32) * 32
	}
	return tpr, gen.CeilDiv(nv, tpr*vpt)
}

// Geom derives the geometry of row params p at shape s.
func (c Config) Geom(s Shape, p Params) Geom {
	g := Geom{M: s.M, N: s.N, DType: s.DType, Vec: p.Vec, VPT: p.VPT, Rows: p.Rows, RPG: p.RPG,
		Unroll: p.Unroll, Prefetch: p.Prefetch, Store: p.Store, MaxNReg: p.MaxNReg}
	g.VB = g.Vec * g.DType.Size()
	g.NV = g.N / g.Vec
	g.TPR, g.Tiles = TPRFor(g.NV, g.VPT, c.MinTPR)
	g.Block = g.TPR * g.Rows
	g.Grid = gen.CeilDiv(g.M, g.Rows*g.RPG)
	g.nq = c.Sums * g.Unroll
	if w := g.TPR / 32; w > 1 {
		g.wp = (w + 3) &^ 3
		g.redBuf = g.Rows * g.nq * g.wp * 4
	}
	g.stashOff = gen.Align16(2 * g.redBuf)
	switch g.Store {
	case StoreSmem:
		g.stashLen = g.Tiles * g.VPT * 2 * g.Block * g.VB
	case StoreAsync:
		g.stashLen = g.RPG * g.VPT * 2 * g.Block * g.VB
	}
	g.CombOff = gen.Align16(g.stashOff + g.stashLen)
	if g.Store == StoreAsync {
		// Every row is read back before the column sums are combined,
		// after a barrier: the combination reuses the stash.
		g.CombOff = g.stashOff
	}
	if c.Cols > 0 && g.Rows > 1 {
		g.CombLen = g.Rows * c.Cols * g.N * 4
	}
	g.Smem = gen.Align16(max(g.stashOff+g.stashLen, g.CombOff+g.CombLen))
	return g
}

// GridExpr is the row kernel's CTA count at any row count:
// ⌈m/(rows·rpg)⌉.
func (g Geom) GridExpr() configs.Expr {
	return configs.CeilDiv(configs.Var(Dim), configs.Int(g.Rows*g.RPG))
}

// LaunchGrid is the row kernel's grid: GridExpr CTAs along x.
func (g Geom) LaunchGrid() [3]configs.Expr {
	return [3]configs.Expr{g.GridExpr(), configs.Int(1), configs.Int(1)}
}

// Shape is an [m × n] matrix whose rows are reduced.
type Shape struct {
	M     int `dim:"m"`
	N     int `dim:"n"`
	DType dtype.DType
}

// Elems is the element count.
func (s Shape) Elems() int { return s.M * s.N }

// ElemsExpr is the element count at any row count: m·n.
func (s Shape) ElemsExpr() configs.Expr { return configs.Var(Dim).TimesInt(s.N) }

// DTypes are the storage types of the row families.
func DTypes() []dtype.DType { return []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} }

// CheckShape keeps element indices within u32 arithmetic.
func CheckShape(s Shape) error {
	return gen.CheckIndexable([]string{"m", "n"}, s.M, s.N)
}
