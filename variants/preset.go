package variants

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Preset is a model configuration from which families derive the shapes a
// fine-tuning step needs: a built-in preset (LookupPreset) or a Hugging
// Face config.json (ReadConfig). Tokens is the number of rows (batch ×
// sequence).
type Preset struct {
	Name         string
	Hidden       int
	Intermediate int
	Layers       int
	Heads        int
	KVHeads      int
	HeadDim      int // Heads·HeadDim may differ from Hidden (Gemma)
	Vocab        int
	RMSNormEps   float64 // 0 for a model with LayerNorm
	LayerNormEps float64 // 0 for a model with RMSNorm
	// TiedEmbeddings: the LM head is the embedding matrix.
	TiedEmbeddings bool
	// FusedQKV: q, k and v are one linear layer, qkv_proj of
	// [(Heads+2·KVHeads)·HeadDim × Hidden] (Phi-3).
	FusedQKV bool
	// FusedGateUp: the MLP's gate and up are one linear layer,
	// gate_up_proj of [2·Intermediate × Hidden] (Phi-3).
	FusedGateUp bool
	Tokens      int
	Seq         int // attention sequence length used for softmax shapes
}

// DefaultTokens is the number of rows when --tokens is not given.
const DefaultTokens = 2048

// DefaultSeq is the attention sequence length of a preset's softmax
// shapes, a config's too.
const DefaultSeq = 512

// Projections are the [out×in] = [N×K] weights of the model's distinct
// linear layers in one decoder layer, each once, in this order: q
// [Heads·HeadDim × Hidden] and o [Hidden × Heads·HeadDim] (one shape when
// Heads·HeadDim = Hidden), k and v [KVHeads·HeadDim × Hidden], gate and
// up [Intermediate × Hidden], down [Hidden × Intermediate]. With FusedQKV
// q, k and v are one [(Heads+2·KVHeads)·HeadDim × Hidden], with
// FusedGateUp gate and up one [2·Intermediate × Hidden]. The GEMM families
// derive their shapes from these.
func (p Preset) Projections() [][2]int {
	q, kv := p.Heads*p.HeadDim, p.KVHeads*p.HeadDim
	var all [][2]int
	if p.FusedQKV {
		all = append(all, [2]int{q + 2*kv, p.Hidden}, [2]int{p.Hidden, q})
	} else {
		all = append(all, [2]int{q, p.Hidden}, [2]int{p.Hidden, q}, [2]int{kv, p.Hidden})
	}
	if p.FusedGateUp {
		all = append(all, [2]int{2 * p.Intermediate, p.Hidden})
	} else {
		all = append(all, [2]int{p.Intermediate, p.Hidden})
	}
	all = append(all, [2]int{p.Hidden, p.Intermediate})
	var out [][2]int
	for _, nk := range all {
		if !slices.Contains(out, nk) {
			out = append(out, nk)
		}
	}
	return out
}

// presets holds the built-in model configurations.
var presets = map[string]Preset{
	// Qwen2.5-1.5B, from its config.json (testdata/models/qwen2.5-1.5b.json,
	// which ReadConfig reads to the same numbers).
	"qwen1.5b": {Name: "qwen1.5b", Hidden: 1536, Intermediate: 8960, Layers: 28, Heads: 12,
		KVHeads: 2, HeadDim: 128, Vocab: 151936, RMSNormEps: 1e-6, TiedEmbeddings: true,
		Tokens: DefaultTokens, Seq: DefaultSeq},
}

// LookupPreset returns the preset called name, with Tokens set to tokens
// (DefaultTokens when tokens is 0).
func LookupPreset(name string, tokens int) (Preset, error) {
	p, ok := presets[strings.ToLower(name)]
	if !ok {
		return Preset{}, fmt.Errorf("unknown preset %q (presets: %s)", name, strings.Join(PresetNames(), ", "))
	}
	if tokens < 0 {
		return Preset{}, fmt.Errorf("tokens must be positive, got %d", tokens)
	}
	if tokens > 0 {
		p.Tokens = tokens
	}
	return p, nil
}

// PresetNames lists the built-in presets, sorted.
func PresetNames() []string {
	var n []string
	for k := range presets {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// IsPreset reports whether s names a preset.
func IsPreset(s string) bool { _, ok := presets[strings.ToLower(s)]; return ok }
