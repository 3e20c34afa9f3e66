package variants

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// models is testdata/models, the published configs.
var models = filepath.Join("..", "testdata", "models")

// TestReadConfigPublished: each committed config reads to its model's
// numbers, with the model type's defaults where the published file leaves
// a field out.
func TestReadConfigPublished(t *testing.T) {
	base := Preset{Tokens: DefaultTokens, Seq: DefaultSeq}
	with := func(p Preset) Preset { p.Tokens, p.Seq = base.Tokens, base.Seq; return p }
	cases := map[string]Preset{
		"qwen2.5-1.5b.json": with(Preset{Name: "Qwen/Qwen2.5-1.5B", Hidden: 1536, Intermediate: 8960, Layers: 28,
			Heads: 12, KVHeads: 2, HeadDim: 128, Vocab: 151936, RMSNormEps: 1e-6, TiedEmbeddings: true}),
		"llama-3.2-1b-instruct.json": with(Preset{Name: "meta-llama/Llama-3.2-1B-Instruct", Hidden: 2048, Intermediate: 8192,
			Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64, Vocab: 128256, RMSNormEps: 1e-5, TiedEmbeddings: true}),
		"mistral-7b-v0.1.json": with(Preset{Name: "mistralai/Mistral-7B-v0.1", Hidden: 4096, Intermediate: 14336,
			Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 32000, RMSNormEps: 1e-5}),
		// No tie_word_embeddings in the published file: Gemma2Config's true.
		"gemma-2-2b-it.json": with(Preset{Name: "google/gemma-2-2b-it", Hidden: 2304, Intermediate: 9216,
			Layers: 26, Heads: 8, KVHeads: 4, HeadDim: 256, Vocab: 256000, RMSNormEps: 1e-6, TiedEmbeddings: true}),
		"phi-3-mini-4k-instruct.json": with(Preset{Name: "Phi-3-mini-4k-instruct", Hidden: 3072, Intermediate: 8192,
			Layers: 32, Heads: 32, KVHeads: 32, HeadDim: 96, Vocab: 32064, RMSNormEps: 1e-5,
			FusedQKV: true, FusedGateUp: true}),
		"phi-2.json": with(Preset{Name: "microsoft/phi-2", Hidden: 2560, Intermediate: 10240,
			Layers: 32, Heads: 32, KVHeads: 32, HeadDim: 80, Vocab: 51200, LayerNormEps: 1e-5}),
	}
	files, err := filepath.Glob(filepath.Join(models, "*.json"))
	if err != nil || len(files) != len(cases) {
		t.Fatalf("%d configs in %s (%v), want the %d this test knows", len(files), models, err, len(cases))
	}
	for file, want := range cases {
		got, err := ReadConfig(filepath.Join(models, file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", file, got, want)
		}
	}
}

// TestQwenConfigIsThePreset: the preset qwen1.5b is Qwen2.5-1.5B's
// config.json, field for field but the name.
func TestQwenConfigIsThePreset(t *testing.T) {
	c, err := ReadConfig(filepath.Join(models, "qwen2.5-1.5b.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := LookupPreset("qwen1.5b", 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Name = p.Name
	if c != p {
		t.Errorf("config %+v\npreset %+v", c, p)
	}
}

// TestProjections: each model's distinct linear layers, [out×in], worked
// out by hand from its architecture.
func TestProjections(t *testing.T) {
	cases := map[string][][2]int{
		// q and o one shape (12·128 = 1536), k·v, gate·up, down.
		"qwen2.5-1.5b.json":          {{1536, 1536}, {256, 1536}, {8960, 1536}, {1536, 8960}},
		"llama-3.2-1b-instruct.json": {{2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}},
		"mistral-7b-v0.1.json":       {{4096, 4096}, {1024, 4096}, {14336, 4096}, {4096, 14336}},
		// 8 heads × 256 = 2048 against hidden 2304: q and o differ.
		"gemma-2-2b-it.json": {{2048, 2304}, {2304, 2048}, {1024, 2304}, {9216, 2304}, {2304, 9216}},
		// qkv_proj (32+2·32)·96 = 9216, o_proj, gate_up_proj 2·8192, down_proj.
		"phi-3-mini-4k-instruct.json": {{9216, 3072}, {3072, 3072}, {16384, 3072}, {3072, 8192}},
		// q, k, v and dense all 2560×2560 (32 KV heads), fc1, fc2.
		"phi-2.json": {{2560, 2560}, {10240, 2560}, {2560, 10240}},
	}
	for file, want := range cases {
		p, err := ReadConfig(filepath.Join(models, file))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Projections(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: projections %v, want %v", file, got, want)
		}
	}
}

// writeConfig writes content to dir/name and returns its path.
func writeConfig(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadConfigDefaults: a null field is one left out; the name falls
// back to the file's; head_dim is derived where it may be and used as
// given where the model type lets it differ.
func TestReadConfigDefaults(t *testing.T) {
	dir := t.TempDir()
	p, err := ReadConfig(writeConfig(t, dir, "tiny-llama.json", `{"model_type": "llama", "hidden_size": 64,
		"intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": null,
		"vocab_size": 100, "head_dim": null}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Preset{Name: "tiny-llama", Hidden: 64, Intermediate: 128, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 16,
		Vocab: 100, RMSNormEps: 1e-6, Tokens: DefaultTokens, Seq: DefaultSeq}
	if p != want {
		t.Errorf("got %+v\nwant %+v", p, want)
	}
	// Mistral-Nemo's head dim, 128, is not 5120/32.
	p, err = ReadConfig(writeConfig(t, dir, "nemo.json", `{"model_type": "mistral", "hidden_size": 5120,
		"intermediate_size": 14336, "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
		"head_dim": 128, "vocab_size": 131072}`))
	if err != nil || p.HeadDim != 128 {
		t.Errorf("nemo: head dim %d, %v", p.HeadDim, err)
	}
	// A qwen2 head_dim that is hidden_size/num_attention_heads is no conflict.
	p, err = ReadConfig(writeConfig(t, dir, "qwen.json", `{"model_type": "qwen2", "hidden_size": 1536,
		"intermediate_size": 8960, "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2,
		"head_dim": 128, "vocab_size": 151936}`))
	if err != nil || p.HeadDim != 128 || p.TiedEmbeddings {
		t.Errorf("qwen2 with head_dim: %+v, %v", p, err)
	}
}

// TestReadConfigRefuses: each wrong config is refused with the file and
// the field named.
func TestReadConfigRefuses(t *testing.T) {
	dir := t.TempDir()
	llama := func(fields string) string {
		return `{"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
			"num_attention_heads": 32, "vocab_size": 128256` + fields + `}`
	}
	cases := []struct{ content, want string }{
		{`{"model_type": "llama", "hidden_size": 2048,`, "not JSON: line 1: unexpected end of JSON input"},
		{"{\n\"model_type\": 'llama'}", "not JSON: line 2: invalid character '\\''"},
		{`[1, 2]`, "not a Hugging Face config: the top level is a JSON array, want an object"},
		{`null`, "the top level is null"},
		{`{"hidden_size": 2048}`, "no model_type (model types tune reads: gemma, gemma2, llama, mistral, phi, phi3, qwen2)"},
		{`{"model_type": "gemma3"}`, `model_type "gemma3" is not one tune reads (model types: gemma, gemma2, llama, mistral, phi, phi3, qwen2)`},
		{`{"model_type": 7}`, "model_type: want a string, got 7"},
		{`{"model_type": "llama", "intermediate_size": 8192}`, "no hidden_size (a llama config gives hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, vocab_size)"},
		{strings.Replace(llama(""), `"vocab_size": 128256`, `"vocab_size": null`, 1), "no vocab_size"},
		{strings.Replace(llama(""), "2048", "-2048", 1), "hidden_size: want a positive integer, got -2048"},
		{strings.Replace(llama(""), "2048", "0", 1), "hidden_size: want a positive integer, got 0"},
		{strings.Replace(llama(""), "8192", "8192.5", 1), "intermediate_size: want a positive integer, got 8192.5"},
		{strings.Replace(llama(""), "8192", `"8192"`, 1), `intermediate_size: want a positive integer, got "8192"`},
		{strings.Replace(llama(""), "128256", "4294967296", 1), "vocab_size: want a positive integer, got 4294967296"},
		{llama(`, "num_key_value_heads": 3`), "num_key_value_heads=3 does not divide num_attention_heads=32"},
		{llama(`, "num_key_value_heads": 0`), "num_key_value_heads: want a positive integer, got 0"},
		{llama(`, "rms_norm_eps": -1e-5`), "rms_norm_eps: want a positive number, got -1e-5"},
		{llama(`, "tie_word_embeddings": "yes"`), `tie_word_embeddings: want true or false, got "yes"`},
		{strings.Replace(llama(""), `"num_attention_heads": 32`, `"num_attention_heads": 30`, 1),
			"hidden_size=2048 is not a multiple of num_attention_heads=30"},
		{strings.Replace(llama(`, "head_dim": 128`), "llama", "qwen2", 1),
			"head_dim=128, but a qwen2 model's head dim is hidden_size/num_attention_heads = 2048/32 = 64"},
		{strings.Replace(llama(`, "head_dim": 128`), "llama", "phi3", 1), "head_dim=128, but a phi3 model's head dim"},
		{strings.Replace(llama(""), "llama", "gemma2", 1), "no head_dim (a gemma2 model's head dim is its own size"},
	}
	for _, c := range cases {
		path := writeConfig(t, dir, "config.json", c.content)
		_, err := ReadConfig(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), path+": ") {
			t.Errorf("%s:\n got %v\nwant %q after %q", c.content, err, c.want, path+": ")
		}
	}
	missing := filepath.Join(dir, "missing.json")
	if _, err := ReadConfig(missing); err == nil || err.Error() != missing+": no such file or directory" {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ReadConfig(dir); err == nil || err.Error() != dir+" is a directory, want a Hugging Face config.json (give its config file, "+filepath.Join(dir, "config.json")+")" {
		t.Errorf("directory: %v", err)
	}
}
