package sweep

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/variants"
)

func setLevel(t *testing.T, sweep string) {
	t.Setenv("GRADTUNE_SWEEP", sweep)
	t.Setenv("GRADTUNE_PTXAS_ALL", "")
}

func TestLevels(t *testing.T) {
	for _, c := range []struct {
		env   string
		level Level
		every int // Every(12)
		desc  string
	}{
		{"", Sample, 96, "a sample of one in 96 (GRADTUNE_SWEEP=ci takes 32 times as many, full all)"},
		{"ci", CI, 3, "a sample of one in 3 (GRADTUNE_SWEEP=ci; full takes all)"},
		{"full", All, 1, "all (GRADTUNE_SWEEP=full)"},
	} {
		setLevel(t, c.env)
		if want := map[bool]int{true: 1, false: 2}[c.level == Sample]; ByDefault(1, 2) != want {
			t.Errorf("GRADTUNE_SWEEP=%q: ByDefault(1, 2) = %d, want %d", c.env, ByDefault(1, 2), want)
		}
		if Current() != c.level || Every(12) != c.every || Describe(12) != c.desc || Full() != (c.level == All) {
			t.Errorf("GRADTUNE_SWEEP=%q: level %v, Every(12) %d, %q", c.env, Current(), Every(12), Describe(12))
		}
		n := 0
		for i := range 288 {
			if Take(i, 12) {
				n++
			}
		}
		if n != 288/c.every {
			t.Errorf("GRADTUNE_SWEEP=%q: Take keeps %d of 288, want %d", c.env, n, 288/c.every)
		}
	}
	setLevel(t, "")
	t.Setenv("GRADTUNE_PTXAS_ALL", "1")
	if !Full() {
		t.Error("GRADTUNE_PTXAS_ALL=1 is not the full sweep")
	}
	setLevel(t, "fulll")
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "want empty (a sample), ci or full") {
			t.Errorf("GRADTUNE_SWEEP=fulll: recovered %v, want a panic naming the levels", r)
		}
	}()
	Current()
}

// grid is the product of axes a (4 values) and b (2 values, the fastest),
// in enumeration order.
func grid() []variants.Params {
	var out []variants.Params
	for a := range 4 {
		for b := range 2 {
			out = append(out, variants.Params{"a": fmt.Sprint(a), "b": fmt.Sprint(b)})
		}
	}
	return out
}

// TestPickCoversEveryValue: a stride of 4 over grid would take b=0 only;
// Pick holds both values of b and all of a, in enumeration order, and
// takes everything at the full level.
func TestPickCoversEveryValue(t *testing.T) {
	setLevel(t, "")
	var got []string
	for _, p := range Pick(grid(), 4) {
		got = append(got, p.String())
	}
	want := "a=0,b=0 a=1,b=1 a=2,b=0 a=3,b=0"
	if strings.Join(got, " ") != want {
		t.Errorf("Pick(grid, 4) = %v, want %s", got, want)
	}
	if n := len(Pick(grid(), 2)); n != 4 {
		t.Errorf("Pick(grid, 2): %d points, want 4", n)
	}
	setLevel(t, "full")
	if n := len(Pick(grid(), 4)); n != 8 {
		t.Errorf("full: Pick(grid, 4) = %d points, want all 8", n)
	}
}

// TestPickGroups: across groups the sample holds every axis value once
// and a point of every group that has one.
func TestPickGroups(t *testing.T) {
	setLevel(t, "")
	only := []variants.Params{{"a": "9", "b": "0"}, {"a": "9", "b": "1"}}
	got := PickGroups([][]variants.Params{grid(), only, nil}, 100)
	held := map[string]bool{}
	for _, g := range got {
		for _, p := range g {
			held["a="+p["a"]], held["b="+p["b"]] = true, true
		}
	}
	if len(held) != 7 || len(got[0]) != 4 || len(got[1]) != 1 || len(got[2]) != 0 {
		t.Errorf("PickGroups = %v: want a=0..3 and a=9, b=0 and b=1, one point of the second group, none of the third", got)
	}
}
