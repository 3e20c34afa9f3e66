package variants

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
)

func TestParamsRoundTrip(t *testing.T) {
	p, err := ParseParams(" vec=4, block=256 ")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.String(); got != "block=256,vec=4" {
		t.Fatalf("String = %q", got)
	}
	q, err := ParseParams(p.String())
	if err != nil || q.String() != p.String() {
		t.Fatalf("round trip: %v %v", q, err)
	}
	for _, bad := range []string{"block", "block=", "=4", "a=1,a=2"} {
		if _, err := ParseParams(bad); err == nil {
			t.Errorf("ParseParams(%q) succeeded", bad)
		}
	}
}

func TestSpaceEnumerateAndCheck(t *testing.T) {
	s := Space{
		Axes: []Axis{IntAxis("block", "", 64, 128), IntAxis("vec", "", 1, 2, 4)},
		Constraints: []Constraint{{Name: "small", OK: func(p Params) error {
			b, _ := p.Int("block")
			v, _ := p.Int("vec")
			if b*v > 256 {
				return errString("too big")
			}
			return nil
		}}},
	}
	all := s.Enumerate()
	if len(all) != 5 || s.Size() != 6 {
		t.Fatalf("Enumerate gave %d of %d: %v", len(all), s.Size(), all)
	}
	for _, p := range all {
		if err := s.Check(p); err != nil {
			t.Errorf("enumerated %v fails Check: %v", p, err)
		}
	}
	cases := map[string]string{
		"block=128,vec=4":       "violate small",
		"block=96,vec=1":        "values: 64, 128",
		"block=64":              `"vec" missing`,
		"block=64,vec=1,warp=2": `unknown param "warp"`,
	}
	for in, want := range cases {
		p, _ := ParseParams(in)
		err := s.Check(p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%s) = %v, want error containing %q", in, err, want)
		}
	}
	if c := s.Complete(Params{"vec": "2"}); c.String() != "block=64,vec=2" {
		t.Errorf("Complete = %v", c)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestParseSpecs(t *testing.T) {
	sp, err := ParseSpecs("m=2048,n=8960;n=18350080,dtype=bf16")
	if err != nil {
		t.Fatal(err)
	}
	if len(sp) != 2 || sp[1].DType != dtype.BF16 {
		t.Fatalf("got %+v", sp)
	}
	if v, ok := sp[0].Get("n"); !ok || v != 8960 {
		t.Errorf("n = %d %v", v, ok)
	}
	if sp, err := ParseSpecs("ceil=0"); err != nil || sp[0].Dims[0].Value != 0 {
		t.Errorf("ParseSpecs(ceil=0) = %+v, %v: a 0 is the family's to judge", sp, err)
	}
	for _, bad := range []string{"m=-1", "m=Abc", "m=1x", "m", "m=1,m=2", "m=1,dtype=int4", ""} {
		if _, err := ParseSpecs(bad); err == nil {
			t.Errorf("ParseSpecs(%q) succeeded", bad)
		}
	}
}

func TestShapeKey(t *testing.T) {
	s := Shape{Dims: []Dim{{Name: "m", Value: 2048}, {Name: "n", Value: 8960}}, DType: dtype.F32}
	if s.Key() != "m=2048,n=8960,dtype=f32" || s.Elems() != 2048*8960 || s.Size() != "2048×8960" {
		t.Errorf("key %q elems %d size %q", s.Key(), s.Elems(), s.Size())
	}
}

func TestPresets(t *testing.T) {
	p, err := LookupPreset("qwen1.5b", 0)
	if err != nil || p.Tokens != DefaultTokens || p.Hidden != 1536 || p.Intermediate != 8960 {
		t.Fatalf("%+v %v", p, err)
	}
	if p, _ := LookupPreset("QWEN1.5B", 512); p.Tokens != 512 {
		t.Errorf("tokens = %d", p.Tokens)
	}
	if _, err := LookupPreset("llama", 0); err == nil || !strings.Contains(err.Error(), "qwen1.5b") {
		t.Errorf("unknown preset error = %v", err)
	}
}

// TestDecimalExtents: any extent may be written as a decimal; the typed
// shape decides whether it takes one (TestShapeCodec).
func TestDecimalExtents(t *testing.T) {
	sp, err := ParseSpecs("n=2,p=1.5;p=0.25,n=3;p=2;p=12.125;p=.5")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		f     float64
		i     int
		print string
	}{{1.5, 1, "1.5"}, {0.25, 0, "0.25"}, {2, 2, "2"}, {12.125, 12, "12.125"}, {0.5, 0, "0.5"}}
	for i, w := range want {
		f, ok := sp[i].Float("p")
		v, _ := sp[i].Get("p")
		if !ok || f != w.f || v != w.i {
			t.Errorf("spec %d: Float = %v %v, Get = %d; want %v, %d", i, f, ok, v, w.f, w.i)
		}
		s := Shape{Dims: sp[i].Dims, DType: dtype.F32}
		if s.Float("p") != w.f || !strings.Contains(s.Key(), "p="+w.print+",") || !strings.Contains(s.Size(), w.print) {
			t.Errorf("spec %d: shape Float %v, Key %q, Size %q; want p=%s", i, s.Float("p"), s.Key(), s.Size(), w.print)
		}
	}
	if k := (Shape{Dims: sp[0].Dims, DType: dtype.F32}).Key(); k != "n=2,p=1.5,dtype=f32" {
		t.Errorf("Key = %q", k)
	}
	for _, bad := range []string{"p=1.5000", "p=0.0", "p=1.", "p=-1.5", "p=1.5e3", "p=1..5", "n=1.2345", "m=.", "p=a.5"} {
		if _, err := ParseSpecs(bad); err == nil {
			t.Errorf("ParseSpecs(%q) succeeded", bad)
		}
	}
}
