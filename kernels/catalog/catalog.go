package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/attn"
	"github.com/gradtune/gradtune/kernels/elementwise"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/kernels/linxent"
	"github.com/gradtune/gradtune/kernels/lora"
	"github.com/gradtune/gradtune/kernels/lppool"
	"github.com/gradtune/gradtune/kernels/nf4gemm"
	"github.com/gradtune/gradtune/kernels/norm"
	"github.com/gradtune/gradtune/kernels/softmax"
	"github.com/gradtune/gradtune/kernels/xent"
)

// families is every family, in no particular order: listings sort them.
var families = slices.Concat(
	elementwise.Families(),
	gemm.Families(),
	softmax.Families(),
	nf4gemm.Families(),
	norm.Families(),
	lppool.Families(),
	xent.Families(),
	lora.Families(),
	linxent.Families(),
	attn.Families(),
)

// All returns every family, sorted by name.
func All() []kernels.Family {
	out := append([]kernels.Family(nil), families...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Names lists the families' names, sorted.
func Names() []string {
	var n []string
	for _, f := range All() {
		n = append(n, f.Name())
	}
	return n
}

// Lookup returns the family called name.
func Lookup(name string) (kernels.Family, error) {
	for _, f := range families {
		if f.Name() == name {
			return f, nil
		}
	}
	return nil, fmt.Errorf("unknown kernel %q (kernels: %s)", name, strings.Join(Names(), ", "))
}

// ParseList resolves "a,b" or "all" into families.
func ParseList(s string) ([]kernels.Family, error) {
	if strings.TrimSpace(s) == "all" {
		return All(), nil
	}
	var out []kernels.Family
	seen := map[string]bool{}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		f, err := Lookup(n)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no kernel named (kernels: %s, or all)", strings.Join(Names(), ", "))
	}
	return out, nil
}
