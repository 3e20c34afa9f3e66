package tuning

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// models is testdata/models, the published configs.
var models = filepath.Join("..", "testdata", "models")

// TestResolveQwenConfigIsThePreset: --shapes with Qwen2.5-1.5B's
// config.json gives every family exactly the shapes of the preset
// qwen1.5b, at the default and at listed token counts.
func TestResolveQwenConfigIsThePreset(t *testing.T) {
	cfg := filepath.Join(models, "qwen2.5-1.5b.json")
	for _, tokens := range []string{"", "512,4096"} {
		want, err := Resolve(Request{Kernels: "all", Shapes: "qwen1.5b", Tokens: tokens})
		if err != nil {
			t.Fatal(err)
		}
		got, err := Resolve(Request{Kernels: "all", Shapes: cfg, Tokens: tokens})
		if err != nil {
			t.Fatal(err)
		}
		if g, w := strings.Join(keys(got), "\n"), strings.Join(keys(want), "\n"); g != w || len(got.Notes) != len(want.Notes) {
			t.Errorf("--tokens %q: config\n%s\npreset\n%s\nnotes %q, %q", tokens, g, w, got.Notes, want.Notes)
		}
	}
}

// gemmShapes are the keys of gemm_bwd (dx then dw) and nf4_gemm_bwd (f32
// then double-quantized scales) at m rows in bf16 for weights nk, [N×K].
func gemmShapes(m int, nk [][2]int) (gemm, nf4 []string) {
	for _, w := range nk {
		for _, g := range []string{"dx", "dw"} {
			gemm = append(gemm, fmt.Sprintf("gemm_bwd m=%d,n=%d,k=%d,grad=%s,dtype=bf16", m, w[0], w[1], g))
		}
		nf4 = append(nf4, fmt.Sprintf("nf4_gemm_bwd m=%d,n=%d,k=%d,dtype=bf16", m, w[0], w[1]),
			fmt.Sprintf("nf4_gemm_bwd m=%d,n=%d,k=%d,scales=dq,dtype=bf16", m, w[0], w[1]))
	}
	return gemm, nf4
}

// TestResolveConfigGEMMShapes: the GEMM families' shapes of a config are
// its model's linear layers, W as [out×in], worked out by hand.
func TestResolveConfigGEMMShapes(t *testing.T) {
	cases := []struct {
		file string
		nk   [][2]int
	}{
		// Llama-3.2-1B: 32 heads × 64 = 2048 = hidden, so q and o are one
		// shape; k and v 8 × 64 = 512; gate and up 8192; down.
		{"llama-3.2-1b-instruct.json", [][2]int{{2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}}},
		// Phi-3-mini: qkv_proj (32 + 2·32)·96 = 9216, o_proj, gate_up_proj
		// 2·8192 = 16384, down_proj.
		{"phi-3-mini-4k-instruct.json", [][2]int{{9216, 3072}, {3072, 3072}, {16384, 3072}, {3072, 8192}}},
		// Gemma-2-2B: q 8 × 256 = 2048 against hidden 2304, so o differs;
		// k and v 4 × 256 = 1024.
		{"gemma-2-2b-it.json", [][2]int{{2048, 2304}, {2304, 2048}, {1024, 2304}, {9216, 2304}, {2304, 9216}}},
		{"mistral-7b-v0.1.json", [][2]int{{4096, 4096}, {1024, 4096}, {14336, 4096}, {4096, 14336}}},
		// Phi-2: q, k, v and dense all 2560 × 2560; fc1, fc2.
		{"phi-2.json", [][2]int{{2560, 2560}, {10240, 2560}, {2560, 10240}}},
	}
	for _, c := range cases {
		wantGEMM, wantNF4 := gemmShapes(2048, c.nk)
		for kernel, want := range map[string][]string{"gemm_bwd": wantGEMM, "nf4_gemm_bwd": wantNF4} {
			sel, err := Resolve(Request{Kernels: kernel, Shapes: filepath.Join(models, c.file), DTypes: "bf16"})
			if err != nil {
				t.Fatalf("%s %s: %v", c.file, kernel, err)
			}
			if got := keys(sel); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s %s:\n got %q\nwant %q", c.file, kernel, got, want)
			}
		}
	}
	// Two token counts: every shape at each, the dequant's (no token dim)
	// once.
	sel, err := Resolve(Request{Kernels: "nf4_dequant", Shapes: filepath.Join(models, "phi-3-mini-4k-instruct.json"), Tokens: "64,128", DTypes: "bf16"})
	if err != nil || len(sel.Shapes()) != 8 {
		t.Errorf("nf4_dequant at two token counts: %q, %v", keys(sel), err)
	}
}

// TestResolveEveryConfig: every committed config gives every family its
// shapes, none left out.
func TestResolveEveryConfig(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(models, "*.json"))
	if err != nil || len(files) < 4 {
		t.Fatalf("configs %v, %v", files, err)
	}
	for _, f := range files {
		sel, err := Resolve(Request{Kernels: "all", Shapes: f})
		if err != nil || len(sel.Notes) != 0 {
			t.Errorf("%s: %v, notes %q", f, err, sel.Notes)
		}
	}
}

// TestResolveConfigRejects: a config --shapes names is refused as an
// input error naming the flag, the file and the field; --tokens applies
// as for a preset.
func TestResolveConfigRejects(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
		"num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 5, "vocab_size": 128256}`), 0o644); err != nil {
		t.Fatal(err)
	}
	noext := filepath.Join(dir, "config")
	if err := os.WriteFile(noext, []byte(`{"model_type": "t5"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	llama := filepath.Join(models, "llama-3.2-1b-instruct.json")
	cases := []struct {
		req  Request
		want string
	}{
		{Request{Kernels: "relu_bwd", Shapes: bad}, "--shapes " + bad + ": num_key_value_heads=5 does not divide num_attention_heads=32"},
		{Request{Kernels: "relu_bwd", Shapes: noext}, "--shapes " + noext + `: model_type "t5" is not one tune reads`},
		{Request{Kernels: "relu_bwd", Shapes: filepath.Join(dir, "none.json")}, "--shapes " + dir + "/none.json: no such file or directory"},
		{Request{Kernels: "relu_bwd", Shapes: dir}, "--shapes " + dir + " is a directory, want a Hugging Face config.json"},
		{Request{Kernels: "relu_bwd", Shapes: llama, Tokens: "0"}, `--tokens "0": want positive token counts`},
		{Request{Kernels: "rmsnorm_bwd", Shapes: llama, Tokens: "3000000000"}, "--shapes " + llama + " with 3000000000 tokens: rmsnorm_bwd"},
	}
	for _, c := range cases {
		_, err := Resolve(c.req)
		if err == nil || !IsInput(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an input error with %q", c.req, err, c.want)
		}
	}
	// A spec is never taken for a file, even where one has its name.
	t.Chdir(dir)
	if err := os.WriteFile("n=8", []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	sel, err := Resolve(Request{Kernels: "relu_bwd", Shapes: "n=8", DTypes: "f32"})
	if err != nil || strings.Join(keys(sel), "|") != "relu_bwd n=8,dtype=f32" {
		t.Errorf("spec: %q, %v", keys(sel), err)
	}
}
