package ptx

import (
	"fmt"
	"math"
	"strings"
)

// Operand is anything an instruction can take: a register, an immediate, a
// special register, an address or a vector of registers.
type Operand interface {
	String() string
	isOperand()
}

// Reg is a typed virtual register. The zero Reg is invalid.
type Reg struct {
	t  Type
	id int // 1-based within its class
}

// Type returns the type the register was allocated with.
func (r Reg) Type() Type { return r.t }

// Valid reports whether r was allocated by a builder.
func (r Reg) Valid() bool { return r.id > 0 }

func (r Reg) String() string {
	if !r.Valid() {
		return "%invalid"
	}
	return fmt.Sprintf("%s%d", classDecl[classOf(r.t)].prefix, r.id)
}
func (Reg) isOperand() {}

// Imm is an integer immediate.
type Imm int64

func (i Imm) String() string { return fmt.Sprint(int64(i)) }
func (Imm) isOperand()       {}

// F32Imm is a single-precision immediate, printed exactly as 0fXXXXXXXX.
type F32Imm float32

func (f F32Imm) String() string { return fmt.Sprintf("0f%08X", math.Float32bits(float32(f))) }
func (F32Imm) isOperand()       {}

// F64Imm is a double-precision immediate, printed exactly as 0dXXXXXXXXXXXXXXXX.
type F64Imm float64

func (f F64Imm) String() string { return fmt.Sprintf("0d%016X", math.Float64bits(float64(f))) }
func (F64Imm) isOperand()       {}

// SReg is a special register such as %tid.x.
type SReg string

// Special registers.
const (
	TidX    SReg = "%tid.x"
	TidY    SReg = "%tid.y"
	TidZ    SReg = "%tid.z"
	NTidX   SReg = "%ntid.x"
	NTidY   SReg = "%ntid.y"
	CtaidX  SReg = "%ctaid.x"
	CtaidY  SReg = "%ctaid.y"
	CtaidZ  SReg = "%ctaid.z"
	NCtaidX SReg = "%nctaid.x"
	NCtaidY SReg = "%nctaid.y"
	LaneID  SReg = "%laneid"
	WarpID  SReg = "%warpid"
	SMID    SReg = "%smid"
)

// Cluster special registers (sm_90, PTX ISA 7.8; a module reading one is
// raised to them): the CTA's rank in its cluster and the cluster's size,
// the cluster's index in the grid and the CTA's in the cluster.
const (
	ClusterCtaRank  SReg = "%cluster_ctarank"
	ClusterNCtaRank SReg = "%cluster_nctarank"
	ClusterIDX      SReg = "%clusterid.x"
	ClusterIDY      SReg = "%clusterid.y"
	ClusterIDZ      SReg = "%clusterid.z"
	NClusterIDX     SReg = "%nclusterid.x"
	NClusterIDY     SReg = "%nclusterid.y"
	NClusterIDZ     SReg = "%nclusterid.z"
	ClusterCtaidX   SReg = "%cluster_ctaid.x"
	ClusterCtaidY   SReg = "%cluster_ctaid.y"
	ClusterCtaidZ   SReg = "%cluster_ctaid.z"
	ClusterNCtaidX  SReg = "%cluster_nctaid.x"
	ClusterNCtaidY  SReg = "%cluster_nctaid.y"
	ClusterNCtaidZ  SReg = "%cluster_nctaid.z"
)

func (s SReg) String() string { return string(s) }
func (SReg) isOperand()       {}

// Sym names a module- or kernel-level variable (a shared array) or a kernel
// parameter.
type Sym struct {
	Name string
	typ  Type
	tmap bool // a tensor-map parameter (.align 64 .b8 [128])
}

func (s Sym) String() string { return s.Name }
func (Sym) isOperand()       {}

// Addr is a memory operand [base+off]; base is a register or a symbol.
type Addr struct {
	Base Operand
	Off  int64
}

// At returns the address base+off.
func At(base Operand, off int64) Addr { return Addr{Base: base, Off: off} }

func (a Addr) String() string {
	if a.Off != 0 {
		// PTX spells a negative offset [base+-8]; ptxas rejects [base-8].
		return fmt.Sprintf("[%s+%d]", a.Base, a.Off)
	}
	return fmt.Sprintf("[%s]", a.Base)
}
func (Addr) isOperand() {}

// Vec is a braced register list as used by vector ld/st and mov unpacking.
type Vec []Reg

func (v Vec) String() string {
	s := make([]string, len(v))
	for i, r := range v {
		s[i] = r.String()
	}
	return "{" + strings.Join(s, ", ") + "}"
}
func (Vec) isOperand() {}

// Sink is PTX's sink operand `_`: a destination whose value is dropped
// (mbarrier.arrive's state, elect.sync's lane index).
type Sink struct{}

func (Sink) String() string { return "_" }
func (Sink) isOperand()     {}

// DstPair is a destination of two parts, printed d|p: elect.sync writes
// the elected lane to D (a b32 register or Sink) and the predicate P.
type DstPair struct {
	D Operand
	P Reg
}

func (d DstPair) String() string { return d.D.String() + "|" + d.P.String() }
func (DstPair) isOperand()       {}

// TensorAddr is the tensor operand of cp.async.bulk.tensor,
// [map, {c0, c1, ...}]: the tensor map (its generic address in a 64-bit
// register, or the tensor-map parameter itself) and the box's
// coordinates, innermost first, in elements (s32).
type TensorAddr struct {
	Map    Operand
	Coords []Operand
}

func (t TensorAddr) String() string {
	c := make([]string, len(t.Coords))
	for i, o := range t.Coords {
		c[i] = o.String()
	}
	return fmt.Sprintf("[%s, {%s}]", t.Map, strings.Join(c, ", "))
}
func (TensorAddr) isOperand() {}

// Label is a branch target. Structured control flow makes its own; raw
// labels are for hand-written branches.
type Label string

func (l Label) String() string { return string(l) }
func (Label) isOperand()       {}
