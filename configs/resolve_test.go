package configs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// twoLaunches is a program over m rows: a persistent grid capped at two
// CTAs per SM and rounded to clusters of 2, then a dependent launch.
func twoLaunches() ([]Launch, []Buffer) {
	m := Var("m")
	bufs := []Buffer{{Name: "x", DType: BF16, Elems: m.TimesInt(64), Role: Input},
		{Name: "y", DType: F32, Elems: m, Role: Output},
		{Name: "flags", DType: F32, Elems: Int(4), Role: State}}
	ls := []Launch{
		{Entry: "a", Grid: [3]Expr{CeilDiv(m, Int(8)), Int(1), Int(1)}, GridPerSM: 2, Cluster: [3]int{2, 1, 1}, Block: [3]int{128, 1, 1},
			SharedBytes: 100 << 10, Args: []Arg{
				{TensorMap: &TensorMap{Buffer: "x", DType: BF16, Dims: []Expr{Int(64), m}, Strides: Ints(128), Box: []int{64, 32}, Swizzle: 128}},
				{Buffer: "flags"}, {Scalar: m, Type: U32}}},
		{Entry: "b", Grid: Grid(1, 1, 1), Block: [3]int{32, 1, 1}, Dependent: true, Args: []Arg{{Buffer: "y", Offset: Int(4)}, {Scalar: Int(7)}}},
	}
	return ls, bufs
}

func TestResolve(t *testing.T) {
	ls, bufs := twoLaunches()
	for _, c := range []struct {
		m, sms int64
		grid   int
	}{
		{1000, 132, 124}, // cdiv(1000, 8) = 125 CTAs, rounded down to whole clusters
		{1000, 10, 20},   // 2 per SM on 10 SMs
		{3, 132, 2},      // one CTA of work, but a whole cluster
	} {
		p, err := Resolve(ls, bufs, Env{"m": c.m, "sms": c.sms})
		if err != nil {
			t.Fatalf("m=%d: %v", c.m, err)
		}
		a, b := p.Launches[0], p.Launches[1]
		if a.Grid != [3]int{c.grid, 1, 1} || a.Cluster != [3]int{2, 1, 1} || !a.OptIn || !a.Clustered() {
			t.Errorf("m=%d sms=%d: launch a %+v, want grid %d", c.m, c.sms, a, c.grid)
		}
		if m := a.Args[0].TensorMap; m.Dims[1] != int(c.m) || m.L2Promotion != 128 || a.Args[2].Value() != uint32(c.m) {
			t.Errorf("m=%d: arguments %+v %+v", c.m, m, a.Args[2])
		}
		if b.Cluster != [3]int{1, 1, 1} || b.Clustered() || !b.Dependent || b.Args[0].Offset != 4 || b.Args[1].Value() != uint64(7) {
			t.Errorf("launch b %+v", b)
		}
		if y, _ := p.Buffer("y"); y.Elems != int(c.m) || y.Bytes() != 4*int(c.m) {
			t.Errorf("buffer y %+v", y)
		}
	}
}

// TestResolveWhen: a launch whose When is 0 or less is left out, and
// the plan's first launch is then not dependent; a When that cannot be
// evaluated is refused.
func TestResolveWhen(t *testing.T) {
	ls, bufs := twoLaunches()
	when := Var("m").Minus(Int(100))
	ls[0].When = &when
	for _, c := range []struct {
		m       int64
		entries string
		dep     bool
	}{{101, "a b", true}, {100, "b", false}, {7, "b", false}} {
		p, err := Resolve(ls, bufs, Env{"m": c.m, "sms": 132})
		if err != nil {
			t.Fatalf("m=%d: %v", c.m, err)
		}
		var entries []string
		for _, l := range p.Launches {
			entries = append(entries, l.Entry)
		}
		if got := strings.Join(entries, " "); got != c.entries || p.Launches[len(p.Launches)-1].Dependent != c.dep {
			t.Errorf("m=%d: launches %q (last dependent %v), want %q (%v)", c.m, got, p.Launches[len(p.Launches)-1].Dependent, c.entries, c.dep)
		}
	}
	unknown := Var("n")
	ls[0].When = &unknown
	if _, err := Resolve(ls, bufs, Env{"m": 64, "sms": 132}); err == nil || !strings.Contains(err.Error(), "launch 0 (a): when:") {
		t.Errorf("a When over an unknown dim: %v", err)
	}
	// JSON: absent is always, and a When round-trips.
	data, err := json.Marshal(ls[0])
	if err != nil {
		t.Fatal(err)
	}
	var back Launch
	if err := json.Unmarshal(data, &back); err != nil || back.When == nil || !back.When.Equal(*ls[0].When) {
		t.Errorf("when through JSON: %s -> %v (%v)", data, back.When, err)
	}
	if data, _ := json.Marshal(ls[1]); strings.Contains(string(data), "when") {
		t.Errorf("a launch without When writes %s", data)
	}
	// A When of the constant 0 is a condition never met, through JSON too.
	zero := Int(0)
	ls[0].When = &zero
	data, _ = json.Marshal(ls[0])
	back = Launch{}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	ls[0] = back
	if p, err := Resolve(ls, bufs, Env{"m": 1000, "sms": 132}); err != nil || len(p.Launches) != 1 || p.Launches[0].Entry != "b" {
		t.Errorf("when 0 (%s): %+v, %v; want launch b alone", data, p.Launches, err)
	}
}

func TestResolveRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(ls []Launch, bufs []Buffer) ([]Launch, []Buffer)
		env  Env
		want string
	}{
		{"no sms", nil, Env{"m": 64}, `needs the device's multiprocessor count ("sms")`},
		{"no m", nil, Env{"sms": 132}, `variable "m" has no value`},
		{"dependent first", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) { ls[0].Dependent = true; return ls, b }, nil, "the first launch of a program must not be"},
		{"unknown buffer", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) { ls[1].Args[0].Buffer = "z"; return ls, b }, nil, `unknown buffer "z"`},
		{"duplicate buffer", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) { return ls, append(b, b[0]) }, nil, "declared twice"},
		{"bad role", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) { b[0].Role = "temp"; return ls, b }, nil, `role "temp"`},
		{"block", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) { ls[0].Block = [3]int{2048, 1, 1}; return ls, b }, nil, "want 1 to 1024 threads"},
		{"cluster size", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) { ls[0].Cluster = [3]int{32, 1, 1}; return ls, b }, nil, "at most 16"},
		{"grid not whole clusters", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) {
			ls[0].GridPerSM, ls[0].Grid[1], ls[0].Cluster = 0, Int(3), [3]int{1, 2, 1}
			return ls, b
		}, nil, "is not a multiple of its cluster"},
		{"map beyond the buffer", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) { b[0].Elems = Int(64); return ls, b }, nil, "but the buffer has 128"},
		{"bad map", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) { ls[0].Args[0].TensorMap.Box[0] = 128; return ls, b }, nil, "more than the 128-byte swizzle span"},
		{"offset past the end", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) { ls[1].Args[0].Offset = Int(1 << 20); return ls, b }, nil, "past the end of y"},
		{"scalar too large", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) { ls[0].Args[2].Scalar = Int(1 << 40); return ls, b }, nil, "does not fit u32"},
		{"map offset misaligned", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) {
			ls[0].Args[0].TensorMap.Offset = Int(8)
			return ls, b
		}, nil,
			"tensor map of x: offset 8 bytes: want a multiple of 16 bytes"},
		{"map offset negative", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) {
			ls[0].Args[0].TensorMap.Offset = Int(-16)
			return ls, b
		}, nil,
			"offset -16 bytes: want a multiple of 16 bytes, at least 0"},
		// x is exactly the map's 64×m bf16 elements: an offset of one row
		// runs the map's last row past it.
		{"map past the buffer by its offset", func(ls []Launch, b []Buffer) ([]Launch, []Buffer) {
			ls[0].Args[0].TensorMap.Offset = Int(128)
			return ls, b
		}, nil,
			"tensor map of x: dims [64 64] with strides [128] span 8192 bytes from offset 128 (to byte 8320), but the buffer has 8192"},
	} {
		ls, bufs := twoLaunches()
		if c.edit != nil {
			ls, bufs = c.edit(ls, bufs)
		}
		env := c.env
		if env == nil {
			env = Env{"m": 64, "sms": 132}
		}
		_, err := Resolve(ls, bufs, env)
		if !errors.Is(err, ErrBadProgram) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestJSONRoundTrip: every field of a program survives JSON, defaults
// are spelled out, and each argument says its kind.
func TestJSONRoundTrip(t *testing.T) {
	ls, bufs := twoLaunches()
	type program struct {
		Launches []Launch `json:"launches"`
		Buffers  []Buffer `json:"buffers"`
	}
	data, err := json.Marshal(program{ls, bufs})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"tensor_map"`, `"kind":"pointer","buffer":"flags","offset":0`, `"kind":"scalar","type":"u32","value":"m"`,
		`"l2_promotion":128`, `"oob_fill":"zero"`, `"element_strides":[1,1]`, `"interleave":"none"`, `"rank":2`, `"shared_opt_in":true`,
		`"cluster":[1,1,1]`, `"elems":"m*64"`, `"dtype":"bf16"`, `"role":"state"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON lacks %s:\n%s", want, data)
		}
	}
	if !strings.Contains(string(data), `"tensor_map":{"buffer":"x","dtype":"bf16"`) {
		t.Errorf("a tensor map without an offset writes one:\n%s", data)
	}
	var back program
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(data) {
		t.Errorf("round trip changed the program:\n%s\n%s", data, again)
	}
	for _, bad := range []string{
		`{"kind":"pointer","value":3}`, `{"kind":"scalar","type":"f32","value":1}`, `{"kind":"tensor_map"}`, `{"kind":"thing"}`,
		`{"kind":"pointer","buffer":"x","offset":0,"extra":1}`,
	} {
		var a Arg
		if err := json.Unmarshal([]byte(bad), &a); err == nil {
			t.Errorf("argument %s accepted", bad)
		}
	}
	var l Launch
	if err := json.Unmarshal([]byte(`{"entry":"k","grid":[1,1,1],"block":[32,1,1],"cluster":[1,1,1],"shared_bytes":65536,"shared_opt_in":false,"dependent":false,"args":[]}`), &l); err == nil {
		t.Error("a launch of 64 KiB without the opt-in was accepted")
	}
}

// TestResolveMapOffset: a map with an offset resolves to it, and the
// map's footprint is counted from it: x's second half as a map of its own.
func TestResolveMapOffset(t *testing.T) {
	ls, bufs := twoLaunches()
	m := ls[0].Args[0].TensorMap
	m.Offset = Var("m").TimesInt(64)  // m/2 rows of 128 bytes
	m.Dims[1] = Div(Var("m"), Int(2)) // the last m/2 rows
	p, err := Resolve(ls, bufs, Env{"m": 64, "sms": 132})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Launches[0].Args[0].TensorMap; got.Offset != 4096 || got.Dims[1] != 32 || int64(got.Offset)+got.End() != 8192 {
		t.Errorf("map %+v, want offset 4096 and 32 rows ending at the buffer's 8192 bytes", got)
	}
	if s := ls[0].Args[0].String(); s != "{tensormap(x+m*64) box=[64 32] swizzle=128}" {
		t.Errorf("String = %s", s)
	}
}
