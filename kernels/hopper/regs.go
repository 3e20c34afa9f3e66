package hopper

import "github.com/gradtune/gradtune/kernels/ptx"

// ProducerRegs is a TMA producer warpgroup's registers under the
// register split: one thread issues the loads, the others idle.
const ProducerRegs = 40

// MaxConsumerRegs is the most a consumer warpgroup raises itself to.
const MaxConsumerRegs = 240

// An sm_90 SM's resources: its register file, its threads, and its
// shared memory, of which each resident CTA takes CTASharedReserved
// beside its own; a CTA may take at most MaxCTAShared.
const (
	RegsPerSM         = 65536
	ThreadsPerSM      = 2048
	SharedPerSM       = 228 * 1024
	CTASharedReserved = 1024
	MaxCTAShared      = 227 * 1024
)

// RegsFor is the most registers per thread that let ctas CTAs of threads
// threads share an SM's register file: rounded down to a multiple of 8,
// and at most 255.
func RegsFor(threads, ctas int) int { return min(255, RegsPerSM/(threads*ctas)/8*8) }

// CTAsByShared is how many CTAs of shared bytes each an SM's shared
// memory holds.
func CTAsByShared(shared int) int { return SharedPerSM / (shared + CTASharedReserved) }

// InitialRegs is the registers per thread a kernel of threads threads
// under the register split holds from its launch: its .maxnreg, the most
// that lets one CTA fill the register file.
func InitialRegs(threads int) int { return RegsFor(threads, 1) }

// ConsumerBudget is what a consumer warpgroup's thread may raise itself to
// (setmaxnreg.inc) when the producer warpgroup and fillWGs filling ones
// lower themselves to producer registers each, at most MaxConsumerRegs:
// the CTA holds InitialRegs(threads) per thread from its launch, and
// setmaxnreg only moves registers between its warpgroups, so the
// warpgroups' registers after the split must fit that (an inc that asks
// for more waits forever).
func ConsumerBudget(producer, fillWGs, consumers int) int {
	return Split{Producer: producer, Fill: fillWGs, Consumers: consumers}.ConsumerRegs()
}

// Split is a CTA's warpgroups under the register split: warpgroup 0 the
// producer, then Consumers consumer warpgroups, then Fill warpgroups that
// keep the producer's registers (a written B's fillers). CTAs is how many
// such CTAs share an SM's register file (0 or 1: one).
type Split struct {
	Producer  int // registers of the producer and fill warpgroups
	Fill      int // warpgroups beside the producer that lower themselves
	Consumers int // consumer warpgroups
	CTAs      int // CTAs an SM holds at once (0: one)
}

// Threads is the CTA's threads.
func (s Split) Threads() int { return 128 * (1 + s.Fill + s.Consumers) }

// Held is the registers per thread the CTA holds from its launch: its
// .maxnreg, the most that lets CTAs of them fill the register file.
func (s Split) Held() int { return RegsFor(s.Threads(), max(s.CTAs, 1)) }

// ConsumerRegs is the consumers' setmaxnreg.inc budget.
func (s Split) ConsumerRegs() int {
	held := s.Held() * (1 + s.Fill + s.Consumers)
	return min(MaxConsumerRegs, (held-s.Producer*(1+s.Fill))/s.Consumers/8*8)
}

// Reallocates reports whether the consumers' budget exceeds the
// registers a thread holds at launch, so that the split has registers to
// move. Where it does not (one consumer at 256 threads holds 255), the
// consumers' setmaxnreg.inc would ask for fewer than they hold, which the
// PTX ISA leaves undefined: such a kernel runs without the split.
func (s Split) Reallocates() bool { return s.ConsumerRegs() > s.Held() }

// Declare sets the kernel's .maxnreg to what it holds at launch (Held):
// setmaxnreg needs it, and it is what lets CTAs of them share an SM.
func (s Split) Declare(k *ptx.Func) { k.MaxNReg(s.Held()) }

// EnterProducer lowers a producer or fill warpgroup to Producer
// registers (setmaxnreg.dec); EnterConsumer raises a consumer to
// ConsumerRegs (setmaxnreg.inc). Every thread of the warpgroup runs it.
func (s Split) EnterProducer(k *ptx.Func) { k.SetMaxNReg(false, s.Producer) }
func (s Split) EnterConsumer(k *ptx.Func) { k.SetMaxNReg(true, s.ConsumerRegs()) }

// Warpgroup is the thread's warpgroup (u32): tid/128.
func Warpgroup(k *ptx.Func, tid ptx.Reg) ptx.Reg { return k.Shr(ptx.U32, tid, ptx.Imm(7)) }

// Roles runs producer in warpgroup wg 0 and consumer in the others.
func Roles(k *ptx.Func, wg ptx.Reg, producer, consumer func()) {
	k.IfElse(k.Setp("eq", ptx.U32, wg, ptx.Imm(0)), producer, consumer)
}
