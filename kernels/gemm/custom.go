package gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// A Custom is a GEMM that another family emits with the wgmma path into
// its own module: C[r×Cols] = A[r×l]·B[l×Cols] in 16-bit inputs with f32
// accumulation, where t, the token count at run time (the caller's
// runtime dim Dim, passed as the kernel's parameter m), is either C's
// rows (M = 0: r = t, l = Red; A K-major, B K-major or MN-major) or the
// reduction (M > 0: r = M, l = t; A and B MN-major, as gemm_bwd's dW).
// A K-major B (B[k][j] at j·LD + k) is a weight [Cols×Red] read as its
// transpose; an MN-major one has B[k][j] at k·LD + j. Every operand may
// start at a byte offset in its buffer, and B may hold fewer rows than
// the problem's extent (Rows): the rest reads as zeros, so a chunk of a
// weight whose last rows are past the buffer is a GEMM over a padded
// extent.
type Custom struct {
	Entry string
	Dim   string
	M     int // C's rows, or 0 for t
	Cols  int // columns of C
	Red   int // the reduction's length where it is not t (M = 0)
	In    dtype.DType
	A, B  Operand
	Out   string
	OutDT dtype.DType
	// OutOffset is C's first element's byte offset in Out.
	OutOffset int
	// Scale, when set, is an f32 buffer [t]: the epilogue adds to what C
	// holds, C = Scale[row]·C + A·B (OutDT f32, M = 0).
	Scale string
	// Accumulate adds to what C holds, C += A·B, rounded once to OutDT.
	Accumulate bool
	// Reduce adds A·B to what C holds (f32) with atomic adds
	// (red.global.add.v2.f32): C's old values are never loaded, so the
	// epilogue issues its adds and the CTA ends. Each element of C takes
	// one add per launch, so launches of which each waits for the one
	// before (not chained, or WaitPrior) add in their order.
	Reduce bool
	// Epilogue, when set, writes each finished tile in place of the
	// stores (direct epilogue, no Scale, Accumulate or Reduce); its parameters
	// follow C's and its arguments come from Args.
	Epilogue TileEpilogue
	// Chained runs the kernel in a chain of programmatic dependent
	// launches: every CTA lets the next launch start as it begins
	// (griddepcontrol.launch_dependents), and, where WaitPrior, the
	// producer waits for the previous launch (griddepcontrol.wait) before
	// its first load and the launch is Dependent. Nothing of the kernel
	// touches memory before that wait: its stores follow the loads.
	Chained, WaitPrior bool
	// WaitAtEpilogue moves WaitPrior's wait from the producer's first
	// load to the consumers' epilogue (each consumer thread waits before
	// its first tile's epilogue): for a GEMM whose operands no launch of
	// the chain writes, so that its main loop overlaps the previous
	// launch's tail, and only what its epilogue reads or writes waits.
	WaitAtEpilogue bool
}

// A TileEpilogue is a caller's epilogue of a Custom: it declares its
// kernel parameters (after C's), gives the launch's arguments for them,
// and writes a consumer thread's part of each finished tile. Customs
// that share an Entry must share the emitted code.
type TileEpilogue interface {
	Declare(k *ptx.Func)
	Args() []kernels.Arg
	Store(k *ptx.Func, t Tile)
}

// A Tile is a consumer thread's part of a finished tile of C in the
// wgmma accumulator layout: Acc[mb][4j+2h+e] is C's element at row
// Row + 64mb + 8h and column Col + 8j + e (j < BN/8, h and e 0 or 1).
// The four threads of a quad (Lane%4, consecutive lanes) hold the same
// rows. RowOK(dr) is row Row + dr inside C (computed at its first use,
// which must dominate the later ones); ColOK[j] column group j inside
// C; Out the address of the thread's first element of C (u64), rows
// Cols elements of OutDT apart.
type Tile struct {
	Acc      [][]ptx.Reg
	Row, Col ptx.Reg
	Cols     int
	OutDT    dtype.DType
	Col0     ptx.Reg // the tile's first column
	Lane     ptx.Reg
	RowOK    func(dr int) ptx.Reg
	ColOK    []ptx.Reg
	Out      ptx.Reg
	BN       int
}

// A QuadStore stores rows of a tile of 16-bit values as 16-byte vectors:
// for each group g of four column groups, the quad's four threads
// exchange their packed pairs (a 4×4 transpose in two shfl.bfly rounds),
// so that thread q of the quad holds and stores the eight columns of
// column group 4g + q. One warp's store then writes 64 contiguous bytes
// of each of its eight rows instead of 16. Every thread of the warp must
// run each Group (the shuffles take the whole warp).
type QuadStore struct {
	t   Tile
	q   ptx.Reg    // u32: the thread's place in its quad
	low [2]ptx.Reg // bit b of q is 0
}

// NewQuadStore sets up t's thread for QuadStore's groups (C of a 16-bit
// dtype, BN a multiple of 32).
func (t Tile) NewQuadStore(k *ptx.Func) *QuadStore {
	if t.OutDT.Size() != 2 || t.BN%32 != 0 {
		panic(fmt.Sprintf("gemm: a QuadStore of %v values in %d-column tiles (16-bit, a multiple of 32)", t.OutDT, t.BN))
	}
	qs := &QuadStore{t: t, q: k.And(ptx.U32, t.Lane, ptx.Imm(3))}
	for b := range qs.low {
		qs.low[b] = k.Setp("eq", ptx.U32, k.And(ptx.U32, qs.q, ptx.Imm(1<<b)), ptx.Imm(0))
	}
	return qs
}

// Group stores group g of the thread's row dr below Row: words[i] the
// packed pair at columns Col + 8(4g+i) and the next. Nothing is stored
// where rowOK is false or at columns past C's (a multiple of 8).
func (qs *QuadStore) Group(k *ptx.Func, dr, g int, words []ptx.Reg, rowOK ptx.Reg) {
	if len(words) != 4 || 32*g >= qs.t.BN {
		panic(fmt.Sprintf("gemm: QuadStore group %d of %d words in a %d-column tile", g, len(words), qs.t.BN))
	}
	cols := qs.t.Cols
	a := append([]ptx.Reg(nil), words...)
	for _, bit := range []int{1, 0} {
		m := 1 << bit
		for i := range 4 {
			if i&m != 0 {
				continue
			}
			// the thread whose bit is 0 sends a[i|m] and takes the
			// partner's a[i] there; the other the reverse
			send := k.Selp(ptx.B32, a[i|m], a[i], qs.low[bit])
			recv := k.ShflSync("bfly", send, ptx.Imm(int64(m)), ptx.Imm(31), 0xffffffff)
			a[i|m], a[i] = k.Selp(ptx.B32, recv, a[i|m], qs.low[bit]), k.Selp(ptx.B32, a[i], recv, qs.low[bit])
		}
	}
	// the thread stores from column Col0 + 8q = Col + 6q (computed here,
	// not held across the tile's rows)
	first := k.Mad(ptx.U32, qs.q, ptx.Imm(6), qs.t.Col)
	ok := k.And(ptx.Pred, rowOK, k.Setp("lt", ptx.S32, first, ptx.Imm(int64(cols-32*g)))) // signed: cols − 32g may be negative
	at := k.Add(ptx.U64, qs.t.Out, k.MulWide(ptx.U32, qs.q, ptx.Imm(12)))
	k.St(ptx.Global, ptx.B32, ptx.At(at, int64(2*(dr*cols+32*g))), a)
	k.Guard(ok, false)
}

// Operand is a GEMM operand in its buffer: LD elements between the
// buffer's rows, the first element Offset bytes in (a multiple of 16);
// Rows, when not 0, the buffer's rows past Offset that hold it (B only).
type Operand struct {
	Buffer string
	KMajor bool
	LD     int
	Offset int
	Rows   int
}

// problem is c as the wgmma path's problem: t rows at emission (the
// rules' tile counts), M at run time.
func (c Custom) problem(t int) problem {
	op := func(o Operand) operand {
		return operand{buf: o.Buffer, kMajor: o.KMajor, ld: o.LD, off: o.Offset, rows: o.Rows}
	}
	g := problem{r: t, c: c.Cols, l: c.Red, mRows: true, a: op(c.A), b: op(c.B), out: c.Out, in: c.In, od: c.OutDT,
		dim: c.Dim, scale: c.Scale, accumulate: c.Accumulate, reduce: c.Reduce, epi: c.Epilogue}
	if c.M > 0 {
		g.r, g.l, g.mRows = c.M, t, false
	}
	return g
}

// Check refuses what the wgmma path does not emit for c.
func (c Custom) Check() error {
	switch {
	case c.In != dtype.BF16 && c.In != dtype.F16:
		return fmt.Errorf("gemm %s: inputs %v, want bf16 or f16", c.Entry, c.In)
	case c.M == 0 && !c.A.KMajor:
		return fmt.Errorf("gemm %s: with t as C's rows A must be K-major", c.Entry)
	case c.M > 0 && (c.A.KMajor || c.B.KMajor || c.B.Rows != 0 || c.Red != 0 || c.Scale != ""):
		return fmt.Errorf("gemm %s: with t as the reduction A and B are MN-major, B takes no row count, and there is no Red or Scale", c.Entry)
	case c.A.Rows != 0:
		return fmt.Errorf("gemm %s: A takes no row count", c.Entry)
	case c.Scale != "" && c.OutDT != dtype.F32:
		return fmt.Errorf("gemm %s: a scaled epilogue accumulates into f32, not %v", c.Entry, c.OutDT)
	case c.Reduce && (c.OutDT != dtype.F32 || c.Scale != "" || c.Accumulate):
		return fmt.Errorf("gemm %s: Reduce adds into f32 with neither Scale nor Accumulate", c.Entry)
	case c.WaitPrior && !c.Chained:
		return fmt.Errorf("gemm %s: WaitPrior is a link of a chain (Chained)", c.Entry)
	case c.WaitAtEpilogue && !c.WaitPrior:
		return fmt.Errorf("gemm %s: WaitAtEpilogue moves WaitPrior's wait (WaitPrior)", c.Entry)
	case c.Epilogue != nil && (c.Scale != "" || c.Accumulate || c.Reduce || c.M > 0):
		return fmt.Errorf("gemm %s: an epilogue of the caller's takes t as C's rows and no Scale, Accumulate or Reduce", c.Entry)
	case c.OutOffset%16 != 0:
		return fmt.Errorf("gemm %s: output offset %d must be a multiple of 16 bytes", c.Entry, c.OutOffset)
	case c.Cols%8 != 0 || c.A.LD%8 != 0 || c.B.LD%8 != 0:
		return fmt.Errorf("gemm %s: columns %d and leading dims %d, %d must be multiples of 8 (16-byte rows)", c.Entry, c.Cols, c.A.LD, c.B.LD)
	case c.A.Offset%16 != 0 || c.B.Offset%16 != 0:
		return fmt.Errorf("gemm %s: offsets %d, %d must be multiples of 16 bytes", c.Entry, c.A.Offset, c.B.Offset)
	}
	return nil
}

// Tiling is what a Custom's caller chooses: BM×BN tiles, a
// persistent grid or one CTA per tile, and PerSM, the CTAs an SM is to
// hold at once (Params.PerSM; 0 or 1: one).
type Tiling struct {
	BM, BN     int
	Persistent bool
	PerSM      int
}

// Params is the variant of tiling tl for c at t tokens: bk 64, the
// deepest ring that fits (in 1/PerSM of the shared memory) and the
// reduction uses, one or two consumers with a register split, tiles in
// groups, a persistent grid (PerSM CTAs an SM) or one CTA per tile, no
// split, no cluster, direct stores: nothing in it depends on t, so the
// kernel is the same at every t. It refuses a tile the wgmma path's
// rules refuse at t.
func (c Custom) Params(t int, tl Tiling) (Params, error) {
	g := c.problem(t)
	p := Params{MMA: WGMMA, BM: tl.BM, BN: tl.BN, BK: 64, Cluster: 1, SplitK: 1, Reduce: ReduceLaunch,
		Order: Grouped, Persistent: tl.Persistent, Epilogue: Direct, RegSplit: true, PerSM: tl.PerSM}
	p.Consumers = wgConsumersAt(p.BM, p.CTAs())
	p.Stages = ringDepth(g, p)
	if c.M > 0 {
		p.Stages = maxStages(g, p) // the reduction is t: the ring may not depend on it
	}
	for _, rule := range []func(problem, Params) error{tileShape, warpLayout, registers, sharedFits} {
		if err := rule(g, p); err != nil {
			return Params{}, fmt.Errorf("gemm %s at bm=%d bn=%d (%d an SM): %w", c.Entry, p.BM, p.BN, p.CTAs(), err)
		}
	}
	return p, nil
}

// Tiles is the tiles of variant p of c at t tokens.
func (c Custom) Tiles(t int, p Params) int { return tiles(c.problem(t), p) }

// Wave is the CTAs of one wave on the H200, for rules on grid sizes.
const Wave = numSMs

// AddCustom writes c's kernel of variant p (from Params) into m. Customs
// that differ only in their operands' offsets and B's rows share the
// kernel: those are in the tensor maps of their launches.
func AddCustom(m *ptx.Module, c Custom, p Params) error {
	if err := c.Check(); err != nil {
		return err
	}
	if (c.Epilogue != nil || c.Scale != "" || c.Accumulate || c.Reduce) && (p.Epilogue != Direct || p.SplitK != 1 || p.Order == StreamK) {
		return fmt.Errorf("gemm %s: an epilogue of the caller's, Scale, Accumulate and Reduce take whole tiles in registers: the direct epilogue, no split, no stream-K", c.Entry)
	}
	wk := newWgKernel(m, wgBuild{entry: c.Entry, g: c.problem(0), p: p, waitPrior: c.WaitPrior, waitAtEpilogue: c.WaitAtEpilogue, launchNext: c.Chained})
	wk.body()
	return nil
}

// Launch is the launch of c's kernel of variant p: arguments A's and B's
// tensor maps, C, Scale where set, then m (the runtime dim).
func (c Custom) Launch(p Params) kernels.Launch {
	g := c.problem(0)
	out := kernels.Arg{Buffer: c.Out}
	if c.OutOffset != 0 {
		out.Offset = configs.Int(c.OutOffset)
	}
	l := (&wgKernel{g: g, p: p}).launch(c.Entry, out)
	if c.Scale != "" {
		l.Args = append(l.Args, kernels.Arg{Buffer: c.Scale})
	}
	if c.Epilogue != nil {
		l.Args = append(l.Args, c.Epilogue.Args()...)
	}
	l.Args = append(l.Args, g.mArg())
	if p.Persistent {
		l.GridPerSM = p.CTAs()
	}
	if p.CTAs() > 1 {
		l.CTAsPerSM = p.CTAs()
	}
	l.Dependent = c.WaitPrior
	return l
}

// setOffset makes m start off bytes into its buffer.
func setOffset(m *kernels.TensorMap, off int) {
	if off != 0 {
		m.Offset = configs.Int(off)
	}
}
