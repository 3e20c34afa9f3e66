package eval

import "testing"

func TestParse(t *testing.T) {
	for _, s := range Statuses() {
		if got, err := ParseStatus(string(s)); err != nil || got != s {
			t.Errorf("ParseStatus(%q) = %q, %v", s, got, err)
		}
	}
	for _, m := range Modes() {
		if got, err := ParseMode(string(m)); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	if _, err := ParseStatus("great"); err == nil || err.Error() != `status "great": want ok, invalid, compile_error, launch_error, timeout or skipped` {
		t.Errorf("ParseStatus(great): %v", err)
	}
	if _, err := ParseMode("warm"); err == nil || err.Error() != `mode "warm": want cold or hot` {
		t.Errorf("ParseMode(warm): %v", err)
	}
}

func TestClasses(t *testing.T) {
	for _, c := range []struct {
		s                 Status
		transient, failed bool
	}{
		{OK, false, false},
		{Invalid, false, true},
		{CompileError, false, true},
		{LaunchError, true, true},
		{Timeout, true, true},
		{Skipped, false, false},
	} {
		if c.s.Transient() != c.transient || c.s.Failed() != c.failed {
			t.Errorf("%s: transient %v failed %v, want %v %v", c.s, c.s.Transient(), c.s.Failed(), c.transient, c.failed)
		}
	}
}

func TestBaselineParams(t *testing.T) {
	p := BaselineParams("cublas")
	if p != "baseline=cublas" {
		t.Errorf("BaselineParams(cublas) = %q", p)
	}
	if name, ok := BaselineName(p); !ok || name != "cublas" {
		t.Errorf("BaselineName(%q) = %q, %v", p, name, ok)
	}
	for _, q := range []string{"", "baseline=", "bm=64,bn=128", "x=1,baseline=cublas"} {
		if name, ok := BaselineName(q); ok {
			t.Errorf("BaselineName(%q) = %q, true", q, name)
		}
	}
}
