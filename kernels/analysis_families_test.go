package kernels_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gradtune/gradtune/internal/parallel"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// analysisOddSpecs are small, odd shapes for the families' own dimensions;
// each family must accept at least one of them.
var analysisOddSpecs = []string{
	"m=1,n=1", "m=3,n=37", "m=7,n=1003", "m=5,n=96", "m=33,n=513",
	"n=1", "n=7", "n=1003",
	"n=1,c=3,l=37,window=3,stride=2,p=2",
	"n=2,c=3,l=17,window=4,stride=3,p=1.5,ceil=1",
	"n=1,c=1,l=5,window=5,p=3",
	"m=1,n=8,k=8,grad=dx", "m=100,n=72,k=136,grad=dw", "m=37,n=264,k=1000,grad=dx",
	"n=3,k=64", "n=5,k=256,scales=dq", "m=37,n=64,k=192", "m=1,n=128,k=64,scales=dq",
	"t=1,hq=1,hk=1,d=2", "t=3,hq=3,hk=2,d=6", "t=5,hq=12,hk=2,d=128",
	"t=3,v=1003", "t=2,v=40,smooth=0.1", "t=1,v=3",
	"t=1,in=64,out=72,r=8", "t=37,in=136,out=64,r=24", "t=37,h=64,v=1003",
	"s=37,hq=3,hk=1,d=64,causal=1",
}

// analysisSample is the share of each space TestFamiliesPassAnalyses
// emits: sweep.Pick of one in n (every axis value, then spread), n = 16
// (one in 4 with GRADTUNE_SWEEP=ci, all with full), and 32 by default, so
// that the README's command stays under three minutes.
func analysisSample() int { return sweep.ByDefault(32, 16) }

// analysisScale divides analysisSample's share further for a family
// whose space is that many times the others' (lora_bwd's mma, tparts and
// maxnreg axes made it four to five times as large, dyload and fold 2.7
// times that, dbsplit 1.4 to 1.9 times again); 0 means 1.
var analysisScale = map[string]int{"lora_bwd": 17}

// TestFamiliesPassAnalyses emits the variants of every family at the
// qwen1.5b shapes (gemm_bwd's: kernels/gemm's TestEmitPreset, one in 16
// of them) and at small odd shapes: the static analyses of
// kernels/ptx run in Build, so an unsafe variant (a barrier under
// non-uniform control, a shuffle mask that is not the lanes reaching it, a
// shared access out of bounds) fails to emit with ptx.ErrUnsafe. It takes
// a sample of each space (analysisSample) unless GRADTUNE_SWEEP=full.
func TestFamiliesPassAnalyses(t *testing.T) {
	preset, err := variants.LookupPreset("qwen1.5b", 0)
	if err != nil {
		t.Fatal(err)
	}
	type job struct {
		f kernels.Family
		s variants.Shape
	}
	var jobs []job
	for _, f := range catalog.All() {
		shapes := f.Shapes(preset, f.DTypes())
		if f.Name() == "gemm_bwd" {
			shapes = nil // kernels/gemm's TestEmitPreset emits a larger sample of them
		}
		odd := 0
		for _, sp := range analysisOddSpecs {
			specs, err := variants.ParseSpecs(sp)
			if err != nil {
				t.Fatal(err)
			}
			for _, dt := range f.DTypes() {
				if s, err := f.Shape(specs[0], dt); err == nil {
					shapes = append(shapes, s)
					odd++
				}
			}
		}
		if odd == 0 {
			t.Errorf("%s accepts none of the odd shapes %v", f.Name(), analysisOddSpecs)
		}
		for _, s := range shapes {
			jobs = append(jobs, job{f, s})
		}
	}

	var (
		mu       sync.Mutex
		unsafe   = map[string][]string{} // family → messages
		failures []string
		count    int
	)
	parallel.Each(jobs, func(j job) {
		n := 0
		for _, p := range sweep.Pick(simtest.Enumerate(j.f, j.s), analysisSample()*max(1, analysisScale[j.f.Name()])) {
			n++
			_, err := j.f.Emit(j.s, p)
			if err == nil {
				continue
			}
			mu.Lock()
			msg := fmt.Sprintf("%s %s %s: %v", j.f.Name(), j.s.Key(), p, err)
			if errors.Is(err, ptx.ErrUnsafe) || strings.Contains(err.Error(), ": unsafe `") {
				unsafe[j.f.Name()] = append(unsafe[j.f.Name()], msg)
			} else {
				failures = append(failures, msg)
			}
			mu.Unlock()
		}
		mu.Lock()
		count += n
		mu.Unlock()
	})

	for fam, msgs := range unsafe {
		t.Errorf("%s: %d variants fail the analyses; the first:\n%s", fam, len(msgs), strings.Join(msgs[:min(3, len(msgs))], "\n"))
	}
	for i, msg := range failures {
		if i == 5 {
			t.Errorf("... and %d more emit failures", len(failures)-5)
			break
		}
		t.Errorf("emit failed: %s", msg)
	}
	t.Logf("%d variants of %d families over %d shapes: %s", count, len(catalog.All()), len(jobs), sweep.Describe(analysisSample()))
}
