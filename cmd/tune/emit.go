package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/tuning"
)

func emitCommand() *command {
	return &command{
		name:  "emit",
		usage: "emit --kernel K --shapes SPEC [--params P] [--dtype D] [--tokens N]",
		summary: "print the PTX of one variant; axes --params leaves out take the first valid\n" +
			"point that has the given values",
		flags: func(fs *flagSet) { selectionFlags(fs, "", "") },
		run:   cmdEmit,
	}
}

func cmdEmit(fs *flagSet, stdout, stderr io.Writer) error {
	req := request(fs)
	if req.Kernels == "" || strings.Contains(req.Kernels, ",") || req.Kernels == "all" {
		return usagef("emit needs one --kernel (kernels: %s)", strings.Join(catalog.Names(), ", "))
	}
	if req.Shapes == "" {
		return usagef("emit needs --shapes, e.g. --shapes m=2048,n=8960")
	}
	if strings.Contains(req.DTypes, ",") {
		return usagef("emit takes one --dtype, got %q", req.DTypes)
	}
	sel, err := resolve(req, "tune emit", stderr)
	if err != nil {
		return err
	}
	all := sel.Shapes()
	if len(all) != 1 {
		return usagef("emit needs exactly one shape and dtype; --shapes %q gives %d (add --dtype or dtype= to the spec)", req.Shapes, len(all))
	}
	f, s := all[0].F, all[0].S
	p, err := tuning.FirstPoint(f.Space(s), sel.Fix)
	if err != nil {
		return usagef("--params: %s %s: %w", f.Name(), s.Key(), err)
	}
	prog, err := f.Emit(s, p)
	if err != nil {
		return fmt.Errorf("emitting %s %s %s: %w", f.Name(), s.Key(), p, err)
	}
	fmt.Fprintf(stdout, "// kernel %s, shape %s, params %s\n", f.Name(), s.Key(), p)
	for _, l := range prog.Launches {
		grid := fmt.Sprint(l.Grid)
		if l.GridPerSM > 0 {
			grid = fmt.Sprintf("[%d×SMs 1 1]", l.GridPerSM)
		}
		fmt.Fprintf(stdout, "// launch %s grid %s block %v smem %d%s%s\n", l.Entry, grid, l.Block, l.SharedBytes, ctasPerSM(l), when(l))
	}
	fmt.Fprint(stdout, prog.PTX)
	return nil
}

// when is " when E" for a conditional launch, else "".
func when(l configs.Launch) string {
	if l.When == nil {
		return ""
	}
	return " when " + l.When.String()
}

// ctasPerSM is " ctas_per_sm N" for a launch built for several CTAs an
// SM, else nothing.
func ctasPerSM(l configs.Launch) string {
	if !l.MaxCarveout() {
		return ""
	}
	return fmt.Sprintf(" ctas_per_sm %d", l.CTAsPerSM)
}
