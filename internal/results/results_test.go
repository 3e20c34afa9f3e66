package results

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/variants"
)

func open(t *testing.T, name string) *store.DB {
	t.Helper()
	db, err := store.OpenReadOnly(filepath.Join("..", "..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestLoadActivations(t *testing.T) {
	db := open(t, "h200-activations.db")
	set, err := Load(db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Shapes) != 18 || len(set.Runs) != 1 {
		t.Fatalf("%d shapes in %d runs, want 18 in 1", len(set.Shapes), len(set.Runs))
	}
	first := set.Shapes[0]
	if first.Kernel != "relu_bwd" || first.Key != "m=2048,n=8960,dtype=f32" || first.Size != "2048×8960" || first.DType != "f32" {
		t.Errorf("first shape %s %s %s %s, want relu_bwd at 2048×8960 f32 (recorded order)", first.Kernel, first.Key, first.Size, first.DType)
	}
	ws, _ := db.Winners(0)
	for i, sh := range set.Shapes {
		if sh.Winner == nil {
			t.Fatalf("%s %s: no winner", sh.Kernel, sh.Key)
		}
		if len(sh.Valid) != 216 || len(sh.Failed) != 0 || sh.Valid[0].Rank != 1 {
			t.Errorf("%s %s: %d valid, %d failed", sh.Kernel, sh.Key, len(sh.Valid), len(sh.Failed))
		}
		for j := 1; j < len(sh.Valid); j++ {
			if sh.Valid[j].MedianUS < sh.Valid[j-1].MedianUS {
				t.Fatalf("%s %s: ranking not sorted at %d", sh.Kernel, sh.Key, j)
			}
		}
		found := false
		for _, w := range ws {
			if w.Kernel == sh.Kernel && w.ShapeKey == sh.Key {
				found = true
				if w.VariantID != sh.Winner.VariantID || w.MedianUS != sh.Winner.MedianUS {
					t.Errorf("%s %s: winner %d %.3f, table says %d %.3f", sh.Kernel, sh.Key, sh.Winner.VariantID, sh.Winner.MedianUS, w.VariantID, w.MedianUS)
				}
			}
		}
		if !found {
			t.Errorf("shape %d %s %s is not in the winners table", i, sh.Kernel, sh.Key)
		}
		if sh.Baseline == nil || sh.Baseline.Name != "default" || sh.Speedup() < 1 {
			t.Errorf("%s %s: baseline %+v speedup %.3f, want the default variant, slower than the winner", sh.Kernel, sh.Key, sh.Baseline, sh.Speedup())
		}
		pct, of := sh.Bound(sh.Winner)
		if of != "BW" || pct < 30 || pct > 100 {
			t.Errorf("%s %s: bound %.1f%% of %s, want a share of the copy bandwidth", sh.Kernel, sh.Key, pct, of)
		}
		lo, hi := sh.Winner.CI()
		for _, v := range sh.Valid[1:] {
			vlo, _ := v.CI()
			if v.Tie != (vlo <= hi) || lo > sh.Winner.MedianUS {
				t.Fatalf("%s %s: tie flag of rank %d wrong", sh.Kernel, sh.Key, v.Rank)
			}
		}
	}
}

func TestLoadNewestRun(t *testing.T) {
	db := open(t, filepath.Join("research", "h200-async-only.db"))
	set, err := Load(db, Options{Kernels: []string{"rmsnorm_bwd"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range set.Shapes {
		want := int64(1)
		if sh.DType == "f32" {
			want = 2 // re-measured with fixed --params in run 2
		}
		if sh.Run.ID != want {
			t.Errorf("%s: from run %d, want %d", sh.Key, sh.Run.ID, want)
		}
	}
	one, err := Load(db, Options{RunID: 1, Shapes: []variants.Spec{mustSpec(t, "m=2048,dtype=f32")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Shapes) != 2 {
		t.Errorf("run 1 f32: %d shapes, want rmsnorm and layernorm", len(one.Shapes))
	}
}

func TestLoadErrors(t *testing.T) {
	db := open(t, "h200-pool.db")
	for _, c := range []struct {
		name string
		opt  Options
		want error
	}{
		{"unknown run", Options{RunID: 7}, store.ErrNoRun},
		{"a kernel not recorded", Options{Kernels: []string{"relu_bwd"}}, ErrNoResults},
		{"an unknown kernel", Options{Kernels: []string{"nope_bwd"}}, ErrNoResults},
		{"no such shape", Options{Shapes: []variants.Spec{mustSpec(t, "n=1")}}, ErrNoResults},
	} {
		if _, err := Load(db, c.opt); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	_, err := Load(db, Options{Kernels: []string{"relu_bwd"}})
	if want := "no results for relu_bwd in " + db.Path() + " (kernels recorded there: lp_pool1d_bwd)"; err == nil || err.Error() != want {
		t.Errorf("a kernel not recorded: %v, want %q", err, want)
	}
	if _, err := Load(db, Options{Kernels: []string{"nope_bwd"}}); err == nil || !strings.Contains(err.Error(), `unknown kernel "nope_bwd" (kernels: cross_entropy_bwd, flash_attn_bwd, gelu_bwd,`) {
		t.Errorf("an unknown kernel: %v", err)
	}
}

// TestMatches: a spec matches a key literally, and a dim the key leaves
// out matches the family's default for it.
func TestMatches(t *testing.T) {
	for _, c := range []struct {
		kernel, key, spec string
		want              bool
	}{
		{"nf4_dequant", "n=1536,k=1536,dtype=bf16", "n=1536", true},
		{"nf4_dequant", "n=1536,k=1536,dtype=bf16", "scales=f32", true},
		{"nf4_dequant", "n=1536,k=1536,dtype=bf16", "block=64,scales=f32,dtype=bf16", true},
		{"nf4_dequant", "n=1536,k=1536,dtype=bf16", "scales=dq", false},
		{"nf4_dequant", "n=1536,k=1536,dtype=bf16", "block=128", false},
		{"nf4_dequant", "n=1536,k=1536,dtype=bf16", "dtype=f16", false},
		{"nf4_dequant", "n=1536,k=1536,scales=dq,dtype=bf16", "scales=dq", true},
		{"nf4_dequant", "n=1536,k=1536,scales=dq,dtype=bf16", "scales=f32", false},
		{"lp_pool1d_bwd", "n=32,c=256,l=4096,window=4,stride=2,p=2,dtype=f32", "ceil=0", true},
		{"lp_pool1d_bwd", "n=32,c=256,l=4096,window=4,stride=2,p=2,dtype=f32", "ceil=1", false},
		{"relu_bwd", "m=2048,n=8960,dtype=f32", "k=4", false},
		{"gone_bwd", "m=2048,dtype=f32", "m=2048", true},
		{"gone_bwd", "m=2048,dtype=f32", "n=1", false},
	} {
		if got := Matches(c.kernel, c.key, mustSpec(t, c.spec)); got != c.want {
			t.Errorf("Matches(%s, %s, %s) = %v, want %v", c.kernel, c.key, c.spec, got, c.want)
		}
	}
}

func mustSpec(t *testing.T, s string) variants.Spec {
	t.Helper()
	sp, err := variants.ParseSpecs(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp[0]
}

// TestBoundOfTensorCoreKernels: a compute-bound bf16 GEMM is measured
// against the tensor-core peak, a share below 100%, and a memory-bound
// one against the copy bandwidth.
func TestBoundOfTensorCoreKernels(t *testing.T) {
	set, err := Load(open(t, filepath.Join("nf4", "h200-nf4-rs.db")), Options{Kernels: []string{"nf4_gemm_bwd"}})
	if err != nil {
		t.Fatal(err)
	}
	peak, _ := LookupPeaks("NVIDIA H200")
	for _, sh := range set.Shapes {
		pct, of := sh.Bound(sh.Winner)
		compute := sh.Winner.Intensity() > 1e3*peak.TensorTFLOPs/sh.Run.CopyGBps
		if compute && (of != "TC" || pct <= 0 || pct >= 100) || !compute && of != "BW" {
			t.Errorf("%s: %.1f%% of %s (intensity %.0f flop/B)", sh.Key, pct, of, sh.Winner.Intensity())
		}
	}
}
