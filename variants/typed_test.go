package variants

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
)

type mode string

type testParams struct {
	Block int  `axis:"block" values:"64,128" doc:"threads"`
	Vec   int  `axis:"vec" doc:"width"`
	Mode  mode `axis:"mode" values:"a,b"`
	PDL   bool `axis:"pdl" values:"0,1"`
	note  string
}

func testSpace() Typed[testParams] {
	return Typed[testParams]{
		Values: map[string][]string{"vec": Ints(1, 2, 4)},
		Rules: []Rule[testParams]{{Name: "small", Check: func(p testParams) error {
			if p.Block*p.Vec > 256 {
				return errors.New("too big")
			}
			return nil
		}}},
	}
}

func TestTypedRoundTrip(t *testing.T) {
	p := testParams{Block: 128, Vec: 2, Mode: "b", PDL: true}
	enc := Encode(p)
	if got := enc.String(); got != "block=128,mode=b,pdl=1,vec=2" {
		t.Fatalf("Encode = %q", got)
	}
	back, err := Decode[testParams](enc)
	if err != nil || back != p {
		t.Fatalf("Decode(Encode(p)) = %+v, %v; want %+v", back, err, p)
	}
	for in, want := range map[string]string{
		"block=x,mode=a,pdl=0,vec=1":    `block="x" is not an integer`,
		"block=64,mode=a,pdl=2,vec=1":   `pdl="2" is not 0 or 1`,
		"block=64,mode=a,vec=1":         `"pdl" missing`,
		"block=64,mode=a,pdl=yes,vec=1": "not 0 or 1",
	} {
		q, _ := ParseParams(in)
		if _, err := Decode[testParams](q); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode(%s) = %v, want error containing %q", in, err, want)
		}
	}
}

// extendedParams embeds testParams: its axes come first, in place of the
// embedded field, then the extension's.
type extendedParams struct {
	testParams
	Heads int `axis:"heads" values:"1,2"`
}

// TestEmbeddedAxes: an embedded struct's axes are the params type's own,
// encoded, decoded and enumerated like them; an embedded axis repeated by
// the outer type is refused.
func TestEmbeddedAxes(t *testing.T) {
	p := extendedParams{testParams{Block: 64, Vec: 4, Mode: "a"}, 2}
	enc := Encode(p)
	if got := enc.String(); got != "block=64,heads=2,mode=a,pdl=0,vec=4" {
		t.Fatalf("Encode = %q", got)
	}
	if back, err := Decode[extendedParams](enc); err != nil || back != p {
		t.Fatalf("Decode(Encode(p)) = %+v, %v; want %+v", back, err, p)
	}
	s := Typed[extendedParams]{Values: map[string][]string{"vec": Ints(1, 2)}}.Space()
	var names []string
	for _, a := range s.Axes {
		names = append(names, a.Name)
	}
	if got := strings.Join(names, " "); got != "block vec mode pdl heads" {
		t.Errorf("axes: %s", got)
	}
	if n := len(s.Enumerate()); n != 2*2*2*2*2 {
		t.Errorf("Enumerate: %d points, want 32", n)
	}
	type repeated struct {
		testParams
		Again int `axis:"block"`
	}
	if _, err := Decode[repeated](enc); err == nil || !strings.Contains(err.Error(), `"block" empty or repeated`) {
		t.Errorf("a repeated embedded axis: %v", err)
	}
}

func TestTypedSpace(t *testing.T) {
	s := testSpace().Space()
	var names []string
	for _, a := range s.Axes {
		names = append(names, a.Name+"="+strings.Join(a.Values, "|"))
	}
	if got := strings.Join(names, " "); got != "block=64|128 vec=1|2|4 mode=a|b pdl=0|1" {
		t.Fatalf("axes in field order: %s", got)
	}
	if a, _ := s.Axis("block"); a.Doc != "threads" {
		t.Errorf("block doc = %q", a.Doc)
	}
	all := s.Enumerate()
	// 2·3·2·2 = 24 points; block=128,vec=4 (4 points) breaks the rule.
	if len(all) != 20 || all[0].String() != "block=64,mode=a,pdl=0,vec=1" {
		t.Fatalf("Enumerate: %d points, first %v", len(all), all[0])
	}
	p, _ := ParseParams("block=128,vec=4,mode=a,pdl=0")
	if err := s.Check(p); err == nil || !strings.Contains(err.Error(), "violate small: too big") {
		t.Errorf("Check = %v, want the rule named", err)
	}
}

// TestSearchRules: a search rule narrows Space.Search alone; fixing an
// axis it reads keeps its region, fixing another does not; a search rule
// without axes breaks the space.
func TestSearchRules(t *testing.T) {
	typed := testSpace()
	typed.Rules = append(typed.Rules, Rule[testParams]{Name: "mode b never wins", Axes: []string{"mode"}, Search: true,
		Check: func(p testParams) error {
			if p.Mode == "b" {
				return errors.New("measured slower")
			}
			return nil
		}})
	s := typed.Space()
	if got := s.SearchRules(); !slices.Equal(got, []string{"mode b never wins"}) {
		t.Errorf("SearchRules = %q", got)
	}
	if n := len(s.Enumerate()); n != 20 {
		t.Errorf("Enumerate: %d points, want the space's 20", n)
	}
	p, _ := ParseParams("block=64,vec=1,mode=b,pdl=0")
	if err := s.Check(p); err != nil {
		t.Errorf("Check(%s) = %v: a search rule is not the space's", p, err)
	}
	for _, c := range []struct {
		fix  string
		want int
	}{{"", 10}, {"pdl=1", 5}, {"mode=b", 10}, {"block=64,mode=a", 6}} {
		fix := Params{}
		if c.fix != "" {
			fix, _ = ParseParams(c.fix)
		}
		got := 0
		for _, q := range s.Search(fix).Enumerate() {
			match := true
			for k, v := range fix {
				match = match && q[k] == v
			}
			if match {
				got++
			}
		}
		if got != c.want {
			t.Errorf("Search(%q): %d points with the fixed values, want %d", c.fix, got, c.want)
		}
	}
	// pdl=1 only with mode=b: fixing pdl=1 names no axis the search rule
	// reads, yet asks for what it leaves out, so the search is the space.
	coupled := typed
	coupled.Rules = append(slices.Clone(typed.Rules), Rule[testParams]{Name: "pdl with b", Axes: []string{"pdl", "mode"},
		Check: func(p testParams) error {
			if p.PDL && p.Mode != "b" {
				return errors.New("pdl=1 takes mode=b")
			}
			return nil
		}})
	fix, _ := ParseParams("pdl=1")
	if pts := coupled.Space().Search(fix).Enumerate(); len(pts) != 15 {
		t.Errorf("Search(pdl=1) with pdl=1 only in mode b: %d points, want the space's 15", len(pts))
	}
	typed.Rules[len(typed.Rules)-1].Axes = nil
	if n := len(typed.Space().Enumerate()); n != 0 {
		t.Errorf("a search rule without axes: %d points, want a broken space", n)
	}
	if plain := testSpace().Space(); len(plain.Search(Params{}).Enumerate()) != 20 {
		t.Error("a space without search rules is not its own search")
	}
}

func TestTypedSpaceMalformed(t *testing.T) {
	type noAxes struct{ X int }
	type badKind struct {
		F float64 `axis:"f" values:"1"`
	}
	type dup struct {
		A int `axis:"a" values:"1"`
		B int `axis:"a" values:"1"`
	}
	cases := map[string]Space{
		"no field tagged axis": Typed[noAxes]{}.Space(),
		"kind float64":         Typed[badKind]{}.Space(),
		"empty or repeated":    Typed[dup]{}.Space(),
		`axis "vec" of`:        Typed[testParams]{}.Space(),
		`values given for "warp"`: Typed[testParams]{Values: map[string][]string{
			"vec": Ints(1), "warp": Ints(2)}}.Space(),
	}
	for want, s := range cases {
		if len(s.Enumerate()) != 0 {
			t.Errorf("%s: a malformed space has points", want)
		}
		if err := s.Check(Params{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %v, want error containing %q", err, want)
		}
	}
}

type testShape struct {
	M     int   `dim:"m,optional"`
	N     int   `dim:"n"`
	P     Milli `dim:"p,optional"`
	DType dtype.DType
}

func TestShapeCodec(t *testing.T) {
	sp, err := ParseSpecs("m=4,n=7,p=1.5")
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeShape[testShape](sp[0].Dims, dtype.BF16)
	if err != nil {
		t.Fatal(err)
	}
	if want := (testShape{M: 4, N: 7, P: 1500, DType: dtype.BF16}); s != want {
		t.Fatalf("DecodeShape = %+v, want %+v", s, want)
	}
	if got := ShapeOf(s).Key(); got != "m=4,n=7,p=1.5,dtype=bf16" {
		t.Errorf("key = %q", got)
	}
	if got := ShapeOf(testShape{N: 9, DType: dtype.F32}).Key(); got != "n=9,dtype=f32" {
		t.Errorf("optional extents left out: key = %q", got)
	}
	if got := DimNamesOf[testShape](); !reflect.DeepEqual(got, []string{"m", "n", "p"}) {
		t.Errorf("DimNamesOf = %v", got)
	}
	for in, want := range map[string]string{
		"m=4":     "takes m=M (optional),n=N,p=P (optional) (got m=4)",
		"n=4,k=2": "(got n=4,k=2)",
		"n=2.5":   "n=2.5 is not an integer",
	} {
		sp, err := ParseSpecs(in)
		if err != nil {
			if want != "" {
				t.Errorf("ParseSpecs(%s): %v", in, err)
			}
			continue
		}
		if _, err := DecodeShape[testShape](sp[0].Dims, dtype.F32); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeShape(%s) = %v, want error containing %q", in, err, want)
		}
	}
}

type defaultsShape struct {
	N      int    `dim:"n"`
	Block  int    `dim:"block,optional=64"`
	Ceil   int    `dim:"ceil,optional=0"`
	Scales string `dim:"scales,optional=f32" values:"f32,dq"`
	DType  dtype.DType
}

// TestShapeDefaults: a default given or left out is one shape, held by
// the typed shape and left out of the key; other values are kept; 0 is
// accepted only where it is the default.
func TestShapeDefaults(t *testing.T) {
	for in, want := range map[string]string{
		"n=8": "n=8,dtype=f32", "n=8,block=64,ceil=0,scales=f32": "n=8,dtype=f32",
		"n=8,block=128,ceil=1,scales=dq": "n=8,block=128,ceil=1,scales=dq,dtype=f32",
	} {
		sp, err := ParseSpecs(in)
		if err != nil {
			t.Fatal(err)
		}
		s, err := DecodeShape[defaultsShape](sp[0].Dims, dtype.F32)
		if err != nil {
			t.Fatalf("DecodeShape(%s): %v", in, err)
		}
		if got := ShapeOf(s).Key(); got != want {
			t.Errorf("%s: key %q, want %q", in, got, want)
		}
		if in == "n=8" && (s.Block != 64 || s.Scales != "f32" || s.Ceil != 0) {
			t.Errorf("n=8 decodes to %+v, want the defaults", s)
		}
	}
	for in, want := range map[string]string{
		"n=0":          "n=0 is not positive",
		"n=8,block=0":  "block=0 is not positive",
		"n=8,scales=x": "scales=x: want one of f32, dq",
		"block=64":     "takes n=N,block=BLOCK (optional, default 64),ceil=CEIL (optional, default 0),scales=f32|dq (optional, default f32)",
	} {
		sp, err := ParseSpecs(in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeShape[defaultsShape](sp[0].Dims, dtype.F32); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeShape(%s) = %v, want %q", in, err, want)
		}
	}
	type badDefault struct {
		S     string `dim:"s,optional=x" values:"a,b"`
		DType dtype.DType
	}
	if _, err := DecodeShape[badDefault](nil, dtype.F32); err == nil || !strings.Contains(err.Error(), "a default is") {
		t.Errorf("a default outside the values: %v", err)
	}
}

type gradShape struct {
	M     int    `dim:"m"`
	Grad  string `dim:"grad" values:"dx,dw"`
	DType dtype.DType
}

func TestShapeChoices(t *testing.T) {
	sp, err := ParseSpecs("m=100,grad=dw")
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeShape[gradShape](sp[0].Dims, dtype.BF16)
	if err != nil || s != (gradShape{M: 100, Grad: "dw", DType: dtype.BF16}) {
		t.Fatalf("DecodeShape = %+v, %v", s, err)
	}
	vs := ShapeOf(s)
	if vs.Key() != "m=100,grad=dw,dtype=bf16" || vs.Elems() != 100 {
		t.Errorf("key %q, elems %d", vs.Key(), vs.Elems())
	}
	for in, want := range map[string]string{
		"m=100,grad=dy": "grad=dy: want one of dx, dw",
		"m=x,grad=dx":   "m=x is not a number",
		"m=100":         "takes m=M,grad=dx|dw (got m=100)",
	} {
		sp, err := ParseSpecs(in)
		if err != nil {
			t.Fatalf("ParseSpecs(%s): %v", in, err)
		}
		if _, err := DecodeShape[gradShape](sp[0].Dims, dtype.F32); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeShape(%s) = %v, want error containing %q", in, err, want)
		}
	}
	for _, bad := range []string{"grad=Dx", "grad=d-x", "grad=_x"} {
		if _, err := ParseSpecs(bad); err == nil {
			t.Errorf("ParseSpecs(%q) succeeded", bad)
		}
	}
}

func TestProductAndFirst(t *testing.T) {
	s := testSpace().Space()
	if got := len(s.Product()); got != s.Size() {
		t.Errorf("Product: %d points, Size %d", got, s.Size())
	}
	first, ok := s.First()
	if !ok || first.String() != s.Enumerate()[0].String() {
		t.Errorf("First = %v %v, want the first enumerated point", first, ok)
	}
	none := Typed[testParams]{Values: map[string][]string{"vec": Ints(4)}, Rules: []Rule[testParams]{{Name: "never", Check: func(testParams) error { return errors.New("no") }}}}.Space()
	if _, ok := none.First(); ok {
		t.Error("First of a space with no allowed point reports one")
	}
}

// TestTypedEnumerateMatchesConstraints: the typed walk lists exactly the
// points of the product that every constraint allows, in product order,
// also when an axis has a value its field cannot hold (no point with it
// is allowed).
func TestTypedEnumerateMatchesConstraints(t *testing.T) {
	ts := testSpace()
	ts.Values = map[string][]string{"vec": {"1", "x", "4"}, "block": {"64", "128", "256"}}
	s := ts.Space()
	var want []string
	for _, p := range s.Product() {
		ok := true
		for _, c := range s.Constraints {
			ok = ok && c.OK(p) == nil
		}
		if ok {
			want = append(want, p.String())
		}
	}
	var got []string
	for _, p := range s.Enumerate() {
		got = append(got, p.String())
	}
	// 3·3·2·2 = 36 points: vec=x (12), block=128,vec=4 and block=256,vec=4 (8) break a rule.
	if strings.Join(got, " ") != strings.Join(want, " ") || len(got) != 16 {
		t.Errorf("Enumerate:\n%v\nwant the %d allowed points of the product:\n%v", got, len(want), want)
	}
	if first, ok := s.First(); !ok || first.String() != want[0] {
		t.Errorf("First = %v, %v; want %s", first, ok, want[0])
	}
}

// TestRuleAxesPrune: a rule that lists the axes it reads is checked as
// soon as they are set, once per combination of them rather than once per
// point, and the walk still lists exactly the points the product allows.
func TestRuleAxesPrune(t *testing.T) {
	for _, declared := range []bool{false, true} {
		calls := 0
		ts := testSpace()
		r := Rule[testParams]{Name: "block 64 only", Check: func(p testParams) error {
			calls++
			if p.Block != 64 {
				return errors.New("block")
			}
			return nil
		}}
		if declared {
			r.Axes = []string{"block"}
		}
		ts.Rules = append(ts.Rules, r)
		var got []string
		for _, p := range ts.Space().Enumerate() {
			got = append(got, p.String())
		}
		// 2 blocks · 3 vecs · 2 modes · 2 pdl: 12 points have block=64.
		if len(got) != 12 || strings.Contains(strings.Join(got, " "), "block=128") {
			t.Errorf("declared=%v: %d points %v", declared, len(got), got)
		}
		// declared: once for each block value; else at every point that
		// the rule before it allows
		if declared && calls != 2 || !declared && calls <= 2 {
			t.Errorf("declared=%v: the rule ran %d times", declared, calls)
		}
	}
}
