package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/configs/export"
)

const exportHelp = `tune export [--db tune.db] [--run ID] [--kernel K] [--shapes S] --format json|go|c
            [--ptx] [--name N] [--package P] [--force] -o PATH
  the tuned config table of the winners: per GPU, kernel, dtype and shape the
  params, launch geometry, buffers, registers, shared memory, median and CI,
  baseline and provenance. --ptx writes the winners' PTX files beside PATH
  (re-emitted and checked against the recorded sha256). --name is the Go
  variable or C prefix, --package the Go package (default: from PATH).
  An existing file is never replaced without --force.
`

func cmdExport(args []string, stdout io.Writer) error {
	fs := newFlags("export")
	sel := addResultFlags(fs)
	format := fs.String("format", "json", "")
	out := fs.String("o", "", "")
	withPTX := fs.Bool("ptx", false, "")
	force := fs.Bool("force", false, "")
	name := fs.String("name", "", "")
	pkg := fs.String("package", "", "")
	if err := parseResultFlags(fs, args, exportHelp, stdout); err != nil {
		return err
	}
	if !slices.Contains(export.Formats, *format) {
		return usagef("--format %q: want one of %s", *format, strings.Join(export.Formats, ", "))
	}
	if *out == "" {
		return usagef("export needs -o PATH (the table file)")
	}
	set, err := sel.load()
	if err != nil {
		return err
	}
	t, err := export.Build(set)
	if err != nil {
		return userError(err)
	}
	files, err := export.Write(t, *out, export.Options{Format: *format, PTX: *withPTX, Force: *force, Name: *name, Package: *pkg})
	if errors.Is(err, export.ErrExists) || errors.Is(err, configs.ErrMalformed) || errors.Is(err, export.ErrPTXChanged) {
		return usageError{err}
	}
	if err != nil {
		return err
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
