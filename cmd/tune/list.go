package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/tuning"
	"github.com/gradtune/gradtune/variants"
)

func listCommand() *command {
	return &command{name: "list", usage: "list", summary: "families, their dims, dtypes and axes (values per dtype), the regions their search leaves out; presets", run: cmdList}
}

func cmdList(_ *flagSet, stdout, _ io.Writer) error {
	p, err := variants.LookupPreset("qwen1.5b", 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kernels (axis values at the shapes of %s):\n", p.Name)
	for _, f := range catalog.All() {
		fmt.Fprintf(stdout, "  %s — %s\n", f.Name(), f.Doc())
		fmt.Fprintf(stdout, "    dims: %s; dtypes: %v\n", strings.Join(f.Dims(), ", "), f.DTypes())
		printAxes(stdout, tuning.Axes(f, p))
		for _, r := range tuning.SearchRules(f, p) {
			fmt.Fprintf(stdout, "    the search leaves out %s; --params naming an axis of it searches it\n", strings.TrimPrefix(r, "search: "))
		}
	}
	fmt.Fprintln(stdout, "presets:")
	for _, n := range variants.PresetNames() {
		p, _ := variants.LookupPreset(n, 0)
		fmt.Fprintf(stdout, "  %s — hidden %d, intermediate %d, %d layers, %d heads (%d KV), head dim %d, vocab %d; --tokens default %d\n",
			n, p.Hidden, p.Intermediate, p.Layers, p.Heads, p.KVHeads, p.HeadDim, p.Vocab, p.Tokens)
	}
	return nil
}

// printAxes writes an axis a line; an axis whose values differ by dtype
// gets a line per group of dtypes, each naming its dtypes.
func printAxes(w io.Writer, axes []tuning.AxisListing) {
	cell := func(a tuning.AxisListing, g tuning.ValueGroup) string {
		v := strings.Join(g.Values, ",")
		if len(a.Groups) > 1 {
			v += " (" + dtypeList(g.DTypes) + ")"
		}
		return v
	}
	width, nameWidth := 22, 8 // the values and names columns: the family's longest
	for _, a := range axes {
		nameWidth = max(nameWidth, utf8.RuneCountInString(a.Name))
		for _, g := range a.Groups {
			width = max(width, utf8.RuneCountInString(cell(a, g)))
		}
	}
	for _, a := range axes {
		for i, g := range a.Groups {
			name, doc := a.Name, a.Doc
			if i > 0 {
				name, doc = "", ""
			}
			fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("    %-*s %-*s %s", nameWidth, name, width, cell(a, g), doc), " "))
		}
	}
}

func dtypeList(dts []dtype.DType) string {
	var s []string
	for _, d := range dts {
		s = append(s, d.String())
	}
	return strings.Join(s, ", ")
}
