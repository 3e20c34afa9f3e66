package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/runner/sim"
)

// TestProbes runs the tensor-core and cp.async probes on the interpreter
// and checks them against their Go references.
func TestProbes(t *testing.T) {
	probes, err := sim.Probes()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probes {
		t.Run(p.Name, func(t *testing.T) {
			out, err := p.Run(sim.New(sim.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Check(out); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestProbesAssemble assembles every probe with ptxas for sm_80 and sm_90.
func TestProbesAssemble(t *testing.T) {
	path := ptxas.RequireOrSkip(t)
	probes, err := sim.Probes()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, p := range probes {
		for _, arch := range []string{"sm_80", "sm_90"} {
			if _, _, err := ptxas.Assemble(ctx, path, p.PTX, arch); err != nil {
				t.Errorf("%s %s: %v\n%s", p.Name, arch, err, p.PTX)
			}
		}
	}
}
