package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gradtune/gradtune/reports"
)

const showHelp = `tune show [--db tune.db] [--run ID] [--kernel K[,K...]] [--shapes S] [--variants]
  the winners table: per kernel and shape, the winner's params, median and
  95% CI, GB/s, % of the measured bandwidth (or FP32 peak), speedup over the
  baseline (the default variant), ties. Without --run each shape comes from
  the newest run that tuned it. --shapes takes dims such as m=2048,n=8960
  (a subset matches; add dtype=bf16; several separated by ';').
  --variants: the ranked list of every variant of one shape.
`

func cmdShow(args []string, stdout io.Writer) error {
	fs := newFlags("show")
	sel := addResultFlags(fs)
	list := fs.Bool("variants", false, "")
	if err := parseResultFlags(fs, args, showHelp, stdout); err != nil {
		return err
	}
	set, err := sel.load()
	if err != nil {
		return err
	}
	if !*list {
		return reports.WriteWinners(stdout, set)
	}
	if len(set.Shapes) != 1 {
		var names []string
		for _, sh := range set.Shapes {
			names = append(names, fmt.Sprintf("%s %s (run %d)", sh.Kernel, sh.Key, sh.Run.ID))
		}
		return usagef("--variants needs one kernel and shape; the selection has %d:\n  %s\n(narrow it with --kernel and --shapes)",
			len(set.Shapes), strings.Join(names, "\n  "))
	}
	return reports.WriteVariants(stdout, set.Shapes[0])
}
