package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gradtune/gradtune/reports"
)

func showCommand() *command {
	return &command{
		name:  "show",
		usage: "show [--db FILE] [--run ID] [--kernel K] [--shapes S] [--variants]",
		summary: "the winners table: per kernel and shape the winner's params, median and\n" +
			"95% CI, GB/s, % of the measured bandwidth (or FP32 peak), speedup over the\n" +
			"baseline (the default variant) and ties; --variants ranks every variant of one shape",
		flags: func(fs *flagSet) {
			resultFlags(fs)
			fs.Bool("variants", false, "\tthe ranked list of every variant of one shape")
		},
		run: cmdShow,
	}
}

func cmdShow(fs *flagSet, stdout, _ io.Writer) error {
	set, err := loadResults(fs)
	if err != nil {
		return err
	}
	if !fs.Given("variants") {
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
