package step

import (
	"fmt"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/variants"
)

// Rank is the LoRA rank of the step's adapters.
const Rank = 16

// Entry is one kernel shape of the step.
type Entry struct {
	Kernel string
	Spec   string // the shape without its dtype, as --shapes takes it
	Count  int    // launches per step
	What   string // where in the model it runs
}

// Backward lists the step's kernels for model p at p.Tokens tokens, in
// the order the backward runs them.
func Backward(p variants.Preset) []Entry {
	t, l := p.Tokens, p.Layers
	out := []Entry{
		{"cross_entropy_bwd", fmt.Sprintf("t=%d,v=%d", t, p.Vocab), 1, "loss"},
		{"gemm_bwd", fmt.Sprintf("m=%d,n=%d,k=%d,grad=dx", t, p.Vocab, p.Hidden), 1, "LM head dX (frozen)"},
		{"rmsnorm_bwd", fmt.Sprintf("m=%d,n=%d", t, p.Hidden), 2*l + 1, "input, post-attention and final norms"},
	}
	for _, pr := range projections(p) {
		out = append(out,
			Entry{"nf4_gemm_bwd", fmt.Sprintf("m=%d,n=%d,k=%d", t, pr.n, pr.k), pr.count * l, pr.name + " base dX"},
			Entry{"lora_bwd", fmt.Sprintf("t=%d,in=%d,out=%d,r=%d", t, pr.k, pr.n, Rank), pr.count * l, pr.name + " adapter"})
	}
	return append(out,
		Entry{"swiglu_bwd", fmt.Sprintf("m=%d,n=%d", t, p.Intermediate), l, "gated MLP"},
		Entry{"rope_bwd", fmt.Sprintf("t=%d,hq=%d,hk=%d,d=%d", t, p.Heads, p.KVHeads, p.HeadDim), l, "rotary q and k"},
		Entry{"flash_attn_bwd", fmt.Sprintf("s=%d,hq=%d,hk=%d,d=%d,causal=1", t, p.Heads, p.KVHeads, p.HeadDim), l, "causal attention (one sequence of the step's tokens)"},
	)
}

// projection is one distinct [n × k] weight of a layer and how many of
// the layer's projections have it.
type projection struct {
	name  string
	n, k  int
	count int
}

// projections are p's linear layers, equal shapes merged.
func projections(p variants.Preset) []projection {
	q, kv := p.Heads*p.HeadDim, p.KVHeads*p.HeadDim
	var all []projection
	if p.FusedQKV {
		all = append(all, projection{"qkv", q + 2*kv, p.Hidden, 1})
	} else {
		all = append(all, projection{"q", q, p.Hidden, 1}, projection{"k·v", kv, p.Hidden, 2})
	}
	all = append(all, projection{"o", p.Hidden, q, 1})
	if p.FusedGateUp {
		all = append(all, projection{"gate_up", 2 * p.Intermediate, p.Hidden, 1})
	} else {
		all = append(all, projection{"gate·up", p.Intermediate, p.Hidden, 2})
	}
	all = append(all, projection{"down", p.Hidden, p.Intermediate, 1})
	var out []projection
	for _, pr := range all {
		merged := false
		for i := range out {
			if out[i].n == pr.n && out[i].k == pr.k {
				out[i].name += "·" + pr.name
				out[i].count += pr.count
				merged = true
			}
		}
		if !merged {
			out = append(out, pr)
		}
	}
	return out
}

// Resolved is an entry with its shape key in a dtype ("m=…,dtype=bf16"),
// or the reason it has none.
type Resolved struct {
	Entry
	Key     string
	Missing string // why the entry has no shape: no such family, or a shape it refuses
}

// Resolve gives every entry its family's canonical shape key in dt.
func Resolve(entries []Entry, dt dtype.DType) []Resolved {
	out := make([]Resolved, len(entries))
	for i, e := range entries {
		out[i].Entry = e
		f, err := catalog.Lookup(e.Kernel)
		if err != nil {
			out[i].Missing = "not a family yet"
			continue
		}
		specs, err := variants.ParseSpecs(e.Spec)
		if err == nil {
			var s variants.Shape
			if s, err = f.Shape(specs[0], dt); err == nil {
				out[i].Key = s.Key()
				continue
			}
		}
		out[i].Missing = err.Error()
	}
	return out
}
