package ptx

import (
	"strings"
	"testing"
)

func TestMembar(t *testing.T) {
	m := NewModule()
	k := m.Func("k")
	k.Membar("gl")
	k.Membar("cta")
	b, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, "\tmembar.gl;\n\tmembar.cta;\n") {
		t.Errorf("module lacks the membars:\n%s", s)
	}
	m = NewModule()
	m.Func("k").Membar("grid")
	if _, err := m.Build(); err == nil || !strings.Contains(err.Error(), "membar.grid: level must be cta, gl or sys") {
		t.Errorf("Membar(grid): %v", err)
	}
}
