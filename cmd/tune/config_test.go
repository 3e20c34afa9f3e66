package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckOnAConfig: tune check --shapes CONFIG.json runs a model's
// shapes, at --tokens rows, on the interpreter end to end: Llama-3.2-1B's
// intermediate (8192) and hidden (2048) activations for relu_bwd.
func TestCheckOnAConfig(t *testing.T) {
	cfg := filepath.Join("..", "..", "testdata", "models", "llama-3.2-1b-instruct.json")
	code, out, errs := runTune(t, "check", "--shapes", cfg, "--kernel", "relu_bwd", "--tokens", "64", "--dtype", "f32", "--sample", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, want := range []string{"64×8192", "64×2048",
		"4 variants on the interpreter: 4 ok, 0 invalid, 0 errors, 0 compile errors"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The GEMM shapes of a fused model, as emit sees them: Phi-3's
	// qkv_proj at 64 rows is one shape of gemm_bwd's.
	phi3 := filepath.Join("..", "..", "testdata", "models", "phi-3-mini-4k-instruct.json")
	code, out, errs = runTune(t, "emit", "--kernel", "gemm_bwd", "--shapes", phi3, "--tokens", "64", "--dtype", "bf16")
	if code != 2 || !strings.Contains(errs, "emit needs exactly one shape and dtype; --shapes \""+phi3+"\" gives 8") {
		t.Errorf("emit on a config: exit %d, %s%s", code, out, errs)
	}
}
