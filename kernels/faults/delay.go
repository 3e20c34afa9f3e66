package faults

import (
	"fmt"
	"strings"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/kernels"
)

// DelayEntry is the kernel Delay adds; its one argument is the spin time
// in nanoseconds.
const DelayEntry = "gradtune_delay"

// delayPTX spins one thread on %globaltimer (ns) for the time in its
// parameter.
const delayPTX = `
.visible .entry gradtune_delay(
	.param .u64 ns
)
.reqntid 1, 1, 1
{
	.reg .pred %gd_p<2>;
	.reg .b64 %gd_r<5>;
	ld.param.u64 %gd_r1, [ns];
	mov.u64 %gd_r2, %globaltimer;
$gradtune_delay_spin:
	mov.u64 %gd_r3, %globaltimer;
	sub.u64 %gd_r4, %gd_r3, %gd_r2;
	setp.lt.u64 %gd_p1, %gd_r4, %gd_r1;
	@%gd_p1 bra $gradtune_delay_spin;
	ret;
}
`

// Delay returns prog with one more launch at the end: a single thread that
// spins for ns nanoseconds after the program's own launches (same
// stream), so every run of the program takes that much longer, plus the
// cost of the launch. The PTX changes, so the variant has its own hash.
func Delay(prog kernels.Program, ns uint64) (kernels.Program, error) {
	if strings.Contains(prog.PTX, DelayEntry) {
		return kernels.Program{}, fmt.Errorf("faults: the program already has a delay launch")
	}
	out := prog
	out.PTX = strings.TrimRight(prog.PTX, "\n") + "\n" + delayPTX
	out.Launches = append(append([]kernels.Launch(nil), prog.Launches...), kernels.Launch{Entry: DelayEntry,
		Grid: configs.Grid(1, 1, 1), Block: [3]int{1, 1, 1}, Args: []kernels.Arg{{Scalar: configs.Const(int64(ns))}}})
	return out, nil
}

// DelayNS returns the spin time of a program's delay launch, 0 when it has
// none.
func DelayNS(prog kernels.Program) uint64 {
	var ns uint64
	for _, l := range prog.Launches {
		if l.Entry == DelayEntry && len(l.Args) == 1 {
			v, _ := l.Args[0].Scalar.Value()
			ns += uint64(v)
		}
	}
	return ns
}
