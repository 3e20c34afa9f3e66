package kernels_test

import (
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/variants"
)

// seedFamilies are the families this package must register.
var seedFamilies = []string{"gelu_bwd", "relu_bwd", "silu_bwd"}

func TestRegistry(t *testing.T) {
	names := catalog.Names()
	if !sort.StringsAreSorted(names) {
		t.Errorf("Names not sorted: %v", names)
	}
	if len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("Names has duplicates: %v", names)
	}
	for _, n := range seedFamilies {
		if !slices.Contains(names, n) {
			t.Errorf("Names %v lacks %s", names, n)
		}
	}
	all := catalog.All()
	if len(all) != len(names) {
		t.Fatalf("All has %d families, Names %d", len(all), len(names))
	}
	for i, f := range all {
		if f.Name() != names[i] {
			t.Errorf("All()[%d] = %s, Names()[%d] = %s", i, f.Name(), i, names[i])
		}
		g, err := catalog.Lookup(f.Name())
		if err != nil || g != f {
			t.Errorf("Lookup(%s) = %v, %v", f.Name(), g, err)
		}
		if f.Doc() == "" || strings.Contains(f.Doc(), "\n") {
			t.Errorf("%s: Doc %q is not one line", f.Name(), f.Doc())
		}
	}

	_, err := catalog.Lookup("nope_bwd")
	if err == nil {
		t.Fatal("Lookup(nope_bwd) succeeded")
	}
	if want := `unknown kernel "nope_bwd" (kernels: ` + strings.Join(names, ", ") + ")"; err.Error() != want {
		t.Errorf("Lookup error = %q, want %q", err, want)
	}

	lists := []struct {
		in   string
		want []string
		err  string
	}{
		{in: "all", want: names},
		{in: " all ", want: names},
		{in: "relu_bwd", want: []string{"relu_bwd"}},
		{in: "silu_bwd,relu_bwd", want: []string{"silu_bwd", "relu_bwd"}},
		{in: " relu_bwd , relu_bwd,gelu_bwd,", want: []string{"relu_bwd", "gelu_bwd"}},
		{in: "", err: "no kernel named (kernels: " + strings.Join(names, ", ") + ", or all)"},
		{in: " , ", err: "no kernel named"},
		{in: "relu_bwd,nope", err: `unknown kernel "nope" (kernels: ` + strings.Join(names, ", ") + ")"},
		{in: "all,relu_bwd", err: `unknown kernel "all"`},
	}
	for _, c := range lists {
		fs, err := catalog.ParseList(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseList(%q) error = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseList(%q): %v", c.in, err)
			continue
		}
		var got []string
		for _, f := range fs {
			got = append(got, f.Name())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("ParseList(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestToleranceCheck(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		name           string
		tol            kernels.Tolerance
		got, ref       []float64
		maxAbs, maxRel float64
		bad            int
	}{
		{"equal", kernels.Tolerance{}, []float64{1, -2, 0}, []float64{1, -2, 0}, 0, 0, -1},
		{"signed zeros are equal", kernels.Tolerance{}, []float64{math.Copysign(0, -1)}, []float64{0}, 0, 0, -1},
		{"within atol", kernels.Tolerance{Atol: 1e-3}, []float64{1.0005, -2}, []float64{1, -2.0005}, 0.0005, 0.0005, -1},
		{"outside atol", kernels.Tolerance{Atol: 0.05}, []float64{1.25, 2}, []float64{1, 2}, 0.25, 0.25, 0},
		{"rtol scales with ref", kernels.Tolerance{Rtol: 1e-3}, []float64{1000.5, 1.5}, []float64{1000, 1}, 0.5, 0.5, 1},
		{"atol plus rtol", kernels.Tolerance{Atol: 0.1, Rtol: 0.1}, []float64{1.2, 1.2001}, []float64{1, 1}, 0.2001, 0.2001, 1},
		{"first bad index", kernels.Tolerance{Atol: 0.1}, []float64{0, 1, 2, 3}, []float64{0, 0.5, 1, 3}, 1, 1, 1},
		{"zero ref has no relative error", kernels.Tolerance{Atol: 1e-5}, []float64{1e-6}, []float64{0}, 1e-6, 0, -1},
		{"NaN where finite", kernels.Tolerance{Atol: 1}, []float64{0, nan}, []float64{0, 1}, inf, inf, 1},
		{"finite where NaN", kernels.Tolerance{Atol: 1}, []float64{1}, []float64{nan}, inf, inf, 0},
		{"Inf where NaN", kernels.Tolerance{Atol: 1, Rtol: 1}, []float64{inf}, []float64{nan}, inf, inf, 0},
		{"NaN where NaN", kernels.Tolerance{}, []float64{nan, 1}, []float64{nan, 1}, 0, 0, -1},
		{"Inf where Inf", kernels.Tolerance{}, []float64{inf, -inf}, []float64{inf, -inf}, 0, 0, -1},
		{"Inf of the other sign", kernels.Tolerance{Atol: 1}, []float64{inf}, []float64{-inf}, inf, inf, 0},
		{"Inf where finite", kernels.Tolerance{Atol: 1e9, Rtol: 1}, []float64{1, inf}, []float64{1, 1e30}, inf, inf, 1},
		{"finite where Inf", kernels.Tolerance{Atol: 1e9, Rtol: 1}, []float64{1e30}, []float64{inf}, inf, inf, 0},
		{"NaN where Inf", kernels.Tolerance{Atol: 1}, []float64{nan}, []float64{inf}, inf, inf, 0},
		{"got shorter", kernels.Tolerance{Atol: 1}, []float64{1}, []float64{1, 2}, inf, 0, 1},
		{"got longer", kernels.Tolerance{Atol: 1}, []float64{1, 2, 3}, []float64{1, 2}, inf, 0, 2},
		{"got shorter and wrong", kernels.Tolerance{Atol: 1}, []float64{5}, []float64{1, 2}, inf, 4, 0},
		{"both empty", kernels.Tolerance{}, nil, nil, 0, 0, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			abs, rel, bad := c.tol.Check(c.got, c.ref)
			near := func(a, b float64) bool { return a == b || math.Abs(a-b) <= 1e-12*math.Abs(b) }
			if !near(abs, c.maxAbs) || !near(rel, c.maxRel) || bad != c.bad {
				t.Errorf("Check = (%g, %g, %d), want (%g, %g, %d)", abs, rel, bad, c.maxAbs, c.maxRel, c.bad)
			}
		})
	}
}

func TestUniform(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16, dtype.F64} {
		a := kernels.Uniform(dt, 20000, -4, 4, 7, "x")
		if b := kernels.Uniform(dt, 20000, -4, 4, 7, "x"); !slices.Equal(a, b) {
			t.Errorf("%v: Uniform is not deterministic", dt)
		}
		for _, other := range [][]float64{kernels.Uniform(dt, 20000, -4, 4, 8, "x"), kernels.Uniform(dt, 20000, -4, 4, 7, "dy")} {
			same := 0
			for i := range a {
				if a[i] == other[i] {
					same++
				}
			}
			if same > 2000 {
				t.Errorf("%v: another seed or stream repeats %d of %d values", dt, same, len(a))
			}
		}
		var sum float64
		lo, hi := math.Inf(1), math.Inf(-1)
		distinct := map[float64]bool{}
		for _, v := range a {
			if dt.Round(v) != v {
				t.Fatalf("%v: %v is not representable", dt, v)
			}
			// Rounding may reach hi itself, never beyond.
			if v < -4 || v > 4 || math.IsNaN(v) {
				t.Fatalf("%v: %v outside [-4, 4]", dt, v)
			}
			sum += v
			lo, hi = min(lo, v), max(hi, v)
			distinct[v] = true
		}
		if mean := sum / float64(len(a)); math.Abs(mean) > 0.1 {
			t.Errorf("%v: mean %g, want about 0", dt, mean)
		}
		if lo > -3.9 || hi < 3.9 {
			t.Errorf("%v: range [%g, %g] does not fill [-4, 4]", dt, lo, hi)
		}
		if len(distinct) < 500 {
			t.Errorf("%v: only %d distinct values", dt, len(distinct))
		}
	}
	if got := kernels.Uniform(dtype.F32, 0, 0, 1, 1, "s"); len(got) != 0 {
		t.Errorf("Uniform of 0 values = %v", got)
	}
	// Inputs must not change between versions: stored validations and
	// reproduced failures depend on them.
	want := []float64{0.1642547845840454, 0.6092411875724792, 0.3851652145385742}
	if got := kernels.Uniform(dtype.F32, 3, -1, 1, 1, "s"); !slices.Equal(got, want) {
		t.Errorf("Uniform(f32, 3, -1, 1, 1, s) = %v, want %v", got, want)
	}
}

// spec builds a shape spec from name=value pairs.
func spec(t *testing.T, s string) variants.Spec {
	t.Helper()
	sp, err := variants.ParseSpecs(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp[0]
}

func shape(t *testing.T, f kernels.Family, s string, dt dtype.DType) variants.Shape {
	t.Helper()
	sh, err := f.Shape(spec(t, s), dt)
	if err != nil {
		t.Fatalf("%s.Shape(%s, %v): %v", f.Name(), s, dt, err)
	}
	return sh
}

func TestShapeParsing(t *testing.T) {
	for _, name := range seedFamilies {
		f, _ := catalog.Lookup(name)
		if !slices.Equal(f.Dims(), []string{"m", "n"}) {
			t.Errorf("%s: Dims = %v", name, f.Dims())
		}
		if !slices.Equal(f.DTypes(), []dtype.DType{dtype.F32, dtype.F16, dtype.BF16}) {
			t.Errorf("%s: DTypes = %v", name, f.DTypes())
		}
		good := []struct {
			spec string
			dt   dtype.DType
			key  string
		}{
			{"n=1003", dtype.F32, "n=1003,dtype=f32"},
			{"n=1", dtype.F16, "n=1,dtype=f16"},
			{"m=2048,n=8960", dtype.BF16, "m=2048,n=8960,dtype=bf16"},
			{"n=8960,m=2048", dtype.F32, "m=2048,n=8960,dtype=f32"},
			{"M=4,N=5", dtype.F32, "m=4,n=5,dtype=f32"},
			{"m=1,n=2147483647", dtype.F32, "m=1,n=2147483647,dtype=f32"},
		}
		for _, c := range good {
			s := shape(t, f, c.spec, c.dt)
			if s.Key() != c.key {
				t.Errorf("%s.Shape(%s) key %s, want %s", name, c.spec, s.Key(), c.key)
			}
		}
		bad := []struct {
			spec variants.Spec
			dt   dtype.DType
			want string
		}{
			{spec(t, "k=4"), dtype.F32, name + " takes m=M (optional),n=N (got k=4)"},
			{spec(t, "m=4"), dtype.F32, "takes m=M (optional),n=N (got m=4)"},
			{spec(t, "n=4,k=2"), dtype.F32, "takes m=M (optional),n=N (got n=4,k=2)"},
			{spec(t, "m=2,n=4,k=2"), dtype.F32, "takes m=M (optional),n=N (got m=2,n=4,k=2)"},
			{variants.Spec{}, dtype.F32, "takes m=M (optional),n=N (got no extents)"},
			{spec(t, "n=4"), dtype.F64, name + " does not support dtype f64 (dtypes: [f32 f16 bf16])"},
			{spec(t, "n=4"), dtype.Invalid, "does not support dtype dtype(0)"},
			{spec(t, "m=65536,n=65536"), dtype.F32, name + ": 4294967296 elements is more than 2147483647"},
			{spec(t, "m=2,n=1073741824"), dtype.BF16, "2147483648 elements is more than 2147483647"},
			{spec(t, "m=4294967296,n=4294967296"), dtype.F32, "m=4294967296 must be in 1..2147483647"},
			{variants.Spec{Dims: []variants.Dim{{Name: "n", Value: 0}}}, dtype.F32, "n=0 is not positive"},
			{variants.Spec{Dims: []variants.Dim{{Name: "m", Value: -2}, {Name: "n", Value: -3}}}, dtype.F32, "m=-2 is not positive"},
		}
		for _, c := range bad {
			if _, err := f.Shape(c.spec, c.dt); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s.Shape(%v, %v) error = %v, want %q", name, c.spec.Dims, c.dt, err, c.want)
			}
		}
	}
}

func TestShapesFromPreset(t *testing.T) {
	p, err := variants.LookupPreset("qwen1.5b", 512)
	if err != nil {
		t.Fatal(err)
	}
	square := p
	square.Intermediate = square.Hidden
	cases := []struct {
		p    variants.Preset
		dts  []dtype.DType
		want []string
	}{
		{p, []dtype.DType{dtype.BF16}, []string{"m=512,n=8960,dtype=bf16", "m=512,n=1536,dtype=bf16"}},
		{p, []dtype.DType{dtype.F32, dtype.F16}, []string{"m=512,n=8960,dtype=f32", "m=512,n=1536,dtype=f32", "m=512,n=8960,dtype=f16", "m=512,n=1536,dtype=f16"}},
		{p, []dtype.DType{dtype.F16, dtype.F64, dtype.F16}, []string{"m=512,n=8960,dtype=f16", "m=512,n=1536,dtype=f16"}},
		{square, []dtype.DType{dtype.F32}, []string{"m=512,n=1536,dtype=f32"}},
		{p, nil, nil},
	}
	for _, name := range seedFamilies {
		f, _ := catalog.Lookup(name)
		for _, c := range cases {
			var got []string
			for _, s := range f.Shapes(c.p, c.dts) {
				got = append(got, s.Key())
				if _, err := f.Shape(variants.Spec{Dims: s.Dims}, s.DType); err != nil {
					t.Errorf("%s: preset shape %s is not accepted by Shape: %v", name, s.Key(), err)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s.Shapes(%v) = %v, want %v", name, c.dts, got, c.want)
			}
		}
	}
}

func TestSpaceAndEmitRejectBadParams(t *testing.T) {
	for _, name := range seedFamilies {
		f, _ := catalog.Lookup(name)
		for _, dt := range f.DTypes() {
			s := shape(t, f, "m=4,n=1003", dt)
			sp := f.Space(s)
			for _, req := range []string{"block", "vec", "ept", "grid", "maxnreg"} {
				if _, ok := sp.Axis(req); !ok {
					t.Errorf("%s %v: no %s axis", name, dt, req)
				}
			}
			var names []string
			for _, a := range sp.Axes {
				names = append(names, a.Name)
				if a.Doc == "" || len(a.Values) == 0 {
					t.Errorf("%s: axis %s has no doc or no values", name, a.Name)
				}
			}
			vec, _ := sp.Axis("vec")
			wantVec := []string{"1", "2", "4"}
			if dt.Size() == 2 {
				wantVec = []string{"2", "4", "8"}
			}
			if !slices.Equal(vec.Values, wantVec) {
				t.Errorf("%s %v: vec values %v, want %v (16-byte accesses at most)", name, dt, vec.Values, wantVec)
			}
			maxnreg, _ := sp.Axis("maxnreg")
			if maxnreg.Values[0] != "0" {
				t.Errorf("%s: maxnreg values %v do not start with 0 (no cap)", name, maxnreg.Values)
			}

			// Emit accepts exactly the points Enumerate lists.
			allowed := map[string]bool{}
			for _, p := range sp.Enumerate() {
				allowed[p.String()] = true
			}
			if len(allowed) == 0 {
				t.Fatalf("%s %v: empty space", name, dt)
			}
			for _, p := range sp.Product() {
				_, err := f.Emit(s, p)
				if allowed[p.String()] != (err == nil) {
					t.Errorf("%s %v: Emit(%v): allowed %v, err %v", name, dt, p, allowed[p.String()], err)
				}
				if err != nil && !strings.HasPrefix(err.Error(), name+": ") {
					t.Errorf("%s: error %q does not name the family", name, err)
				}
			}

			good := sp.Enumerate()[0]
			with := func(k, v string) variants.Params {
				p := good.Clone()
				if v == "" {
					delete(p, k)
				} else {
					p[k] = v
				}
				return p
			}
			bad := []struct {
				p    variants.Params
				want string
			}{
				{with("grid", ""), `param "grid" missing (axes: ` + strings.Join(names, ", ") + ")"},
				{with("tile", "4"), `unknown param "tile"`},
				{with("block", "big"), "param block=big not accepted"},
				{variants.Params{}, "missing"},
			}
			for _, a := range sp.Axes {
				for _, v := range []string{"999", "bogus", "8", "1", "100", "3", "16", "loop"} {
					if !slices.Contains(a.Values, v) {
						bad = append(bad, struct {
							p    variants.Params
							want string
						}{with(a.Name, v), "param " + a.Name + "=" + v + " not accepted (values: " + strings.Join(a.Values, ", ") + ")"})
					}
				}
			}
			for _, c := range bad {
				_, err := f.Emit(s, c.p)
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), name+": ") {
					t.Errorf("%s %v: Emit(%v) error = %v, want %q after %q", name, dt, c.p, err, c.want, name+": ")
				}
				if err := sp.Check(c.p); err == nil {
					t.Errorf("%s %v: Space.Check(%v) accepted bad params", name, dt, c.p)
				}
			}
		}
	}
}

func TestBuffersAndCost(t *testing.T) {
	cases := []struct {
		spec  string
		dt    dtype.DType
		elems int
		bytes int64
	}{
		{"n=1003", dtype.F32, 1003, 3 * 1003 * 4},
		{"n=1", dtype.F16, 1, 6},
		{"m=2048,n=8960", dtype.BF16, 2048 * 8960, 3 * 2048 * 8960 * 2},
		{"m=2048,n=8960", dtype.F32, 2048 * 8960, 3 * 2048 * 8960 * 4},
	}
	for _, name := range seedFamilies {
		f, _ := catalog.Lookup(name)
		for _, c := range cases {
			s := shape(t, f, c.spec, c.dt)
			bufs := f.Buffers(s)
			want := []struct {
				name  string
				role  kernels.Role
				elems int
			}{{"dy", kernels.Input, c.elems}, {"x", kernels.Input, c.elems}, {"dx", kernels.Output, c.elems}}
			if len(bufs) != len(want) {
				t.Fatalf("%s %s: Buffers = %v, want dy, x, dx", name, s.Key(), bufs)
			}
			for i, w := range want {
				b := bufs[i]
				if b.Name != w.name || b.Role != w.role || b.DType != c.dt || kernels.Elems(b, s) != w.elems {
					t.Errorf("%s %s: buffer %d = %v (%d elements at this shape), want %s %v %v of %d", name, s.Key(), i, b, kernels.Elems(b, s), w.name, w.role, c.dt, w.elems)
				}
			}
			var total int64
			for _, b := range bufs {
				total += int64(kernels.Bytes(b, s))
				if kernels.Bytes(b, s) != c.elems*c.dt.Size() {
					t.Errorf("%s: buffer %s is %d bytes", name, b.Name, kernels.Bytes(b, s))
				}
			}
			cost := f.Cost(s)
			if cost.Bytes != c.bytes || total != c.bytes {
				t.Errorf("%s %s: Cost.Bytes = %d, buffers %d, want %d (read dy and x, write dx)", name, s.Key(), cost.Bytes, total, c.bytes)
			}
			if cost.Flops < 0 {
				t.Errorf("%s: negative flops %d", name, cost.Flops)
			}
		}
	}
	for r, want := range map[kernels.Role]string{kernels.Input: "input", kernels.Output: "output", kernels.Accumulate: "accumulate", kernels.Scratch: "scratch"} {
		if r.String() != want {
			t.Errorf("Role %q String = %s, want %s", string(r), r, want)
		}
	}
}

func TestInputs(t *testing.T) {
	for _, name := range seedFamilies {
		f, _ := catalog.Lookup(name)
		for _, dt := range f.DTypes() {
			s := shape(t, f, "m=3,n=1001", dt)
			in := f.Inputs(s, 1)
			if len(in) != 2 {
				t.Errorf("%s: Inputs has %d buffers, want dy and x", name, len(in))
			}
			again := f.Inputs(s, 1)
			other := f.Inputs(s, 2)
			for _, b := range f.Buffers(s) {
				if b.Role != kernels.Input {
					if _, ok := in[b.Name]; ok {
						t.Errorf("%s: Inputs fills the %s buffer %s", name, b.Role, b.Name)
					}
					continue
				}
				v := in[b.Name]
				if len(v) != kernels.Elems(b, s) {
					t.Fatalf("%s: input %s has %d values, want %d", name, b.Name, len(v), kernels.Elems(b, s))
				}
				if !slices.Equal(v, again[b.Name]) {
					t.Errorf("%s: input %s not deterministic", name, b.Name)
				}
				if slices.Equal(v, other[b.Name]) {
					t.Errorf("%s: input %s ignores the seed", name, b.Name)
				}
				lim := map[string]float64{"dy": 1, "x": 4}[b.Name]
				for _, x := range v {
					if dt.Round(x) != x || math.Abs(x) > lim {
						t.Fatalf("%s %v: input %s value %v not a %v in [-%g, %g]", name, dt, b.Name, x, dt, lim, lim)
					}
				}
			}
			if slices.Equal(in["dy"][:100], in["x"][:100]) {
				t.Errorf("%s: dy and x are the same stream", name)
			}
			out := f.Reference(s, in)
			if len(out) != 1 || len(out["dx"]) != s.Elems() {
				t.Errorf("%s: Reference returns %d buffers, dx of %d", name, len(out), len(out["dx"]))
			}
		}
	}
}
