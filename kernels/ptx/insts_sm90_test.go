package ptx

import (
	"strings"
	"testing"
)

// TestSM90Instructions: griddepcontrol and vector red.add raise the
// module to sm_90 and the PTX version that introduced them; a scalar
// RedAddF32 stays on sm_80.
func TestSM90Instructions(t *testing.T) {
	build := func(body func(k *Func)) (string, string, string) {
		t.Helper()
		m := NewModule()
		k := m.Func("k")
		body(k)
		b, err := m.Build()
		if err != nil {
			t.Fatal(err)
		}
		return b.String(), b.Target(), b.Version()
	}
	vals := func(k *Func, n int) []Reg {
		var v []Reg
		for i := range n {
			v = append(v, k.Mov(F32, F32Imm(float32(i))))
		}
		return v
	}
	for _, c := range []struct {
		name, want, target, version string
		body                        func(k *Func)
	}{
		{"wait", "\tgriddepcontrol.wait;\n", "sm_90", "7.8", func(k *Func) { k.GridDepWait() }},
		{"launch", "\tgriddepcontrol.launch_dependents;\n", "sm_90", "7.8", func(k *Func) { k.GridDepLaunch() }},
		{"red1", "red.global.add.f32 [%rd1], %f1;", "sm_80", "7.0", func(k *Func) {
			k.RedAddF32(At(k.Mov(U64, Imm(4096)), 0), vals(k, 1))
		}},
		{"red2", "red.global.add.v2.f32 [%rd1+8], {%f1, %f2};", "sm_90", "8.1", func(k *Func) {
			k.RedAddF32(At(k.Mov(U64, Imm(4096)), 8), vals(k, 2))
		}},
		{"red4", "red.global.add.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};", "sm_90", "8.1", func(k *Func) {
			k.RedAddF32(At(k.Mov(U64, Imm(4096)), 0), vals(k, 4))
		}},
	} {
		s, target, version := build(c.body)
		if !strings.Contains(s, c.want) || target != c.target || version != c.version {
			t.Errorf("%s: target %s, version %s (want %s, %s), text:\n%s", c.name, target, version, c.target, c.version, s)
		}
	}
	m := NewModule()
	k := m.Func("k")
	k.RedAddF32(At(k.Mov(U64, Imm(0)), 0), vals(k, 3))
	if _, err := m.Build(); err == nil || !strings.Contains(err.Error(), "vector of 3 values") {
		t.Errorf("RedAddF32 of 3 values: %v", err)
	}
}
