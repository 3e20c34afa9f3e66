package variants

import (
	"fmt"
	"sort"
	"strings"
)

// Preset is a model configuration from which families derive the shapes a
// fine-tuning step needs. Tokens is the number of rows (batch × sequence).
type Preset struct {
	Name         string
	Hidden       int
	Intermediate int
	Layers       int
	Heads        int
	KVHeads      int
	HeadDim      int
	Vocab        int
	RMSNormEps   float64
	Tokens       int
	Seq          int // attention sequence length used for softmax shapes
}

// DefaultTokens is the number of rows when --tokens is not given.
const DefaultTokens = 2048

// presets holds the built-in model configurations.
var presets = map[string]Preset{
	// Qwen2.5-1.5B, from its config.json.
	"qwen1.5b": {Name: "qwen1.5b", Hidden: 1536, Intermediate: 8960, Layers: 28, Heads: 12,
		KVHeads: 2, HeadDim: 128, Vocab: 151936, RMSNormEps: 1e-6, Tokens: DefaultTokens, Seq: 512},
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
