package ptxas

import (
	"reflect"
	"testing"
)

func TestReportFaults(t *testing.T) {
	if f := (Report{Function: "k", Registers: 40}).Faults(); f != nil {
		t.Errorf("clean report: faults %q", f)
	}
	r := Report{Function: "k", Registers: 255, SpillStores: 8, SpillLoads: 4, StackBytes: 16, PerfLoss: []string{"(C7515) Potential Performance Loss: x"}}
	want := []string{"k: spills 8/4 bytes, stack 16, 255 registers", "k: (C7515) Potential Performance Loss: x"}
	if f := r.Faults(); !reflect.DeepEqual(f, want) {
		t.Errorf("faults %q, want %q", f, want)
	}
	if !(Report{StackBytes: 8}).Spills() || (Report{Registers: 8}).Spills() {
		t.Error("Spills: a stack frame counts, registers alone do not")
	}
}
