package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/export"
)

func exportCommand() *command {
	return &command{
		name:  "export",
		usage: "export [--db FILE] [--run ID] [--kernel K] [--shapes S] --format json|go|c [--ptx] [--name N] [--package P] [--force] -o PATH",
		summary: "the tuned config table of the winners: per GPU, kernel, dtype and shape the\n" +
			"params, launch geometry, buffers, registers, shared memory, median and CI,\n" +
			"baseline and provenance; --ptx writes the winners' PTX beside PATH",
		flags: func(fs *flagSet) {
			resultFlags(fs)
			fs.String("format", "json", "F\tjson, go or c")
			fs.String("o", "", "PATH\tthe table file")
			fs.Bool("ptx", false, "\twrite the winners' PTX files beside PATH (re-emitted, checked against the recorded sha256)")
			fs.Bool("force", false, "\treplace existing files")
			fs.String("name", "", "N\tthe Go variable or C prefix (default: from PATH)")
			fs.String("package", "", "P\tthe Go package (default: from PATH)")
		},
		run: cmdExport,
	}
}

func cmdExport(fs *flagSet, stdout, _ io.Writer) error {
	out := fs.str("o")
	if out == "" {
		return usagef("export needs -o PATH (the table file)")
	}
	sel, err := resultOptions(fs)
	if err != nil {
		return err
	}
	opt := export.Options{Format: fs.str("format"), PTX: fs.Given("ptx"), Force: fs.Given("force"),
		Keep: protectDB(fs), Name: fs.str("name"), Package: fs.str("package")}
	if err := opt.Check(out); err != nil {
		return usagef("export: %w", err)
	}
	if err := probeFile("-o", out, dotTemp); err != nil {
		return err
	}
	set, err := loadSelection(fs.str("db"), sel)
	if err != nil {
		return err
	}
	t, err := export.Build(set)
	if err != nil {
		return userError(err)
	}
	files, err := export.Write(t, out, opt)
	if errors.Is(err, configs.ErrMalformed) || errors.Is(err, export.ErrPTXChanged) {
		return usageError{err}
	}
	if err != nil {
		return outputError(err)
	}
	fmt.Fprintf(stdout, "%d entries of %s (cc %s) from %s:\n", len(t.Entries), t.GPU.Name, t.GPU.CC, set.Path)
	for _, f := range files {
		fmt.Fprintf(stdout, "  %s\n", f)
	}
	for _, s := range t.Skipped {
		fmt.Fprintf(stdout, "warning: left out: %s\n", s)
	}
	for _, e := range t.Entries {
		if e.Note != "" {
			fmt.Fprintf(stdout, "warning: %s [%s]: %s\n", e.Key(), e.Params, e.Note)
		}
	}
	return nil
}
