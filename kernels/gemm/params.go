package gemm

// MMA is the tensor-core path of a variant.
type MMA string

// The paths.
const (
	WGMMA MMA = "wgmma" // sm_90a: TMA, mbarrier ring, warp-specialized wgmma
	Sync  MMA = "sync"  // sm_80+: cp.async ring, ldmatrix, mma.sync m16n8k16
)

// Order is the order in which tiles are handed out.
type Order string

// The tile orders.
const (
	OrderM  Order = "m"       // consecutive tiles go down a column of tiles (along M of C)
	OrderN  Order = "n"       // consecutive tiles go along a row of tiles
	Grouped Order = "grouped" // groups of groupRows tile rows, column by column within a group
	// StreamK: a persistent grid splits the flat (tile, k-tile) space into
	// one balanced range per CTA (tiles in order m); partial tiles are
	// summed in the kernel (streamk.go).
	StreamK Order = "streamk"
)

// Reduce is how the splits of a split-K tile are summed.
type Reduce string

// The split-K reductions.
const (
	// ReduceLaunch: f32 partials in a workspace, summed by a second launch.
	ReduceLaunch Reduce = "launch"
	// ReduceDSMEM: a tile's splits form a cluster; each stores its f32
	// partial in its own shared memory and sums a share of the tile from
	// all of them through distributed shared memory (dsmem.go).
	ReduceDSMEM Reduce = "dsmem"
)

// Epilogue is how a tile of C leaves the CTA.
type Epilogue string

// The epilogues.
const (
	Direct   Epilogue = "direct" // st.global from the accumulator registers
	TMAStore Epilogue = "tma"    // through shared memory and a TMA bulk tensor store
)

// Params is one variant. See the package doc for what each axis means on
// each path and for the rules between them.
type Params struct {
	MMA        MMA      `axis:"mma" doc:"wgmma: TMA + mbarrier ring + warp-specialized wgmma (sm_90a); sync: cp.async ring + ldmatrix + mma.sync m16n8k16 (sm_80+)"`
	BM         int      `axis:"bm" values:"64,128,192,256" doc:"tile rows of C"`
	BN         int      `axis:"bn" values:"64,96,128,160,192,256" doc:"tile columns of C (96 and 160: 64B-swizzled B atoms of 32 columns)"`
	BK         int      `axis:"bk" values:"32,64" doc:"reduction elements per pipeline stage"`
	Stages     int      `axis:"stages" values:"2,3,4,5,6,8,12" doc:"pipeline stages in shared memory"`
	Consumers  int      `axis:"consumers" values:"1,2,3" doc:"math warpgroups (sync: 4 or 8 warps)"`
	Cluster    int      `axis:"cluster" values:"1,2" doc:"CTAs per cluster, along the rows of C (wgmma)"`
	Multicast  bool     `axis:"multicast" values:"0,1" doc:"1: the cluster's CTAs share the B tile through TMA multicast"`
	SplitK     int      `axis:"splitk" doc:"splits of the reduction, summed as reduce says"`
	Reduce     Reduce   `axis:"reduce" values:"launch,dsmem" default:"launch" doc:"split-K sum: launch (f32 partials in a workspace, a second launch adds them) or dsmem (the splits form a cluster and add through distributed shared memory; wgmma)"`
	Order      Order    `axis:"order" values:"m,n,grouped,streamk" doc:"tile order: down the rows, along the columns, grouped, or stream-K (balanced ranges of k-tiles, partial tiles summed in the kernel)"`
	Persistent bool     `axis:"persistent" values:"0,1" doc:"1: one CTA per SM loops over tiles (wgmma)"`
	Epilogue   Epilogue `axis:"epilogue" values:"direct,tma" doc:"direct stores from registers, or shared memory + TMA store (wgmma)"`
	RegSplit   bool     `axis:"regsplit" values:"0,1" doc:"1: setmaxnreg moves registers from the producer warpgroup to the consumers (wgmma)"`
	// PerSM is how many of the kernel's CTAs an SM is to hold at once
	// (0: one): each takes at most 1/PerSM of the SM's shared memory and
	// registers, so that one CTA's epilogue runs beside another's main
	// loop. Not an axis of gemm_bwd's: a Custom's caller sets it (wgmma).
	PerSM int
}

// CTAs is the CTAs of p an SM holds at once (PerSM, at least one).
func (p Params) CTAs() int { return max(p.PerSM, 1) }
