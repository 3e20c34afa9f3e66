package configs

import (
	"encoding/json"
	"fmt"
)

// Role says how the launches of a program use a buffer.
type Role string

// The buffer roles.
const (
	// Input is filled by the caller before the launches and only read.
	Input Role = "input"
	// Output is written by the launches; its contents before do not matter.
	Output Role = "output"
	// Accumulate is zeroed before every run of the launches, then
	// accumulated into.
	Accumulate Role = "accumulate"
	// Scratch is workspace: any contents, nothing kept between runs.
	Scratch Role = "scratch"
	// State is zeroed once, when it is allocated, and every run of the
	// launches leaves it zero again (counters that wrap, flags that the
	// last reader clears).
	State Role = "state"
	// InOut is filled by the caller before the launches, which read it
	// and overwrite it with the result (a gradient written over the
	// logits it is computed from): after a run it holds the output, so a
	// second run computes from that, not from the caller's data.
	InOut Role = "inout"
)

var roles = []Role{Input, Output, Accumulate, Scratch, State, InOut}

func (r Role) String() string { return string(r) }

func (r Role) check() error {
	for _, k := range roles {
		if r == k {
			return nil
		}
	}
	return fmt.Errorf("role %q: want input, output, accumulate, scratch, state or inout", string(r))
}

// Buffer is a device buffer of a program: Elems elements of DType.
type Buffer struct {
	Name  string
	DType DType
	Elems Expr
	Role  Role
}

// BytesAt is the buffer's size in bytes in env.
func (b Buffer) BytesAt(env Env) (int, error) {
	n, err := b.Elems.EvalInt(env)
	if err != nil {
		return 0, fmt.Errorf("buffer %s: elements: %w", b.Name, err)
	}
	return n * b.DType.Size(), nil
}

type bufferJSON struct {
	Name  string `json:"name"`
	DType string `json:"dtype"`
	Elems Expr   `json:"elems"`
	Role  Role   `json:"role"`
}

// MarshalJSON writes the dtype by name.
func (b Buffer) MarshalJSON() ([]byte, error) {
	return json.Marshal(bufferJSON{b.Name, b.DType.String(), b.Elems, b.Role})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (b *Buffer) UnmarshalJSON(data []byte) error {
	var j bufferJSON
	if err := strictUnmarshal(data, &j); err != nil {
		return fmt.Errorf("buffer: %w", err)
	}
	dt, err := ParseDType(j.DType)
	if err != nil {
		return fmt.Errorf("buffer %s: %w", j.Name, err)
	}
	*b = Buffer{j.Name, dt, j.Elems, j.Role}
	return nil
}

// Launch is one kernel launch of a program.
type Launch struct {
	// Entry is the kernel's name in the program's PTX module.
	Entry string
	// Grid is the CTA count. When GridPerSM > 0, Grid[0] is capped at
	// GridPerSM × the device's multiprocessors (a full-occupancy wave,
	// never more CTAs than Grid asks for), then rounded down to whole
	// clusters.
	Grid      [3]Expr
	GridPerSM int
	Block     [3]int
	// Cluster, when not zero, launches the grid in thread-block clusters
	// of this shape (sm_90); Grid is then a multiple of it.
	Cluster [3]int
	// SharedBytes is the dynamic shared memory of the launch; above 48 KiB
	// the function must opt in first (OptIn).
	SharedBytes int
	// Dependent launches with programmatic stream serialization (sm_90:
	// PDL): the kernel may start while the previous launch of the program
	// is still running, so that its launch latency overlaps that launch's
	// tail. Its kernel executes griddepcontrol.wait before it touches
	// memory the previous launches touch, so launching it in plain stream
	// order is also correct. The first launch of a program is never
	// dependent.
	Dependent bool
	// CTAsPerSM, above one, says that the kernel was built for that many
	// CTAs an SM at once, each within its share of the SM's shared memory
	// and registers: the launcher asks for the largest shared-memory
	// carveout (MaxCarveout), which they may need.
	CTAsPerSM int
	// When, where not nil, makes the launch conditional: at a shape
	// where it evaluates to 0 or less the launch is left out of the plan
	// (it has nothing to do there, and its grid or tensor maps may not
	// exist), as a pass over rows the token count does not reach.
	When *Expr
	Args []Arg
}

// Subst is l with the variable name replaced by by in every expression:
// grid, When, and the arguments' offsets, scalars and tensor maps (a
// launch of a kernel over a part of the rows, the part's count for the
// dim).
func (l Launch) Subst(name string, by Expr) Launch {
	sub := func(e Expr) Expr { return e.Subst(name, by) }
	for d := range l.Grid {
		l.Grid[d] = sub(l.Grid[d])
	}
	if l.When != nil {
		w := sub(*l.When)
		l.When = &w
	}
	args := make([]Arg, len(l.Args))
	for i, a := range l.Args {
		a.Offset, a.Scalar = sub(a.Offset), sub(a.Scalar)
		if a.TensorMap != nil {
			m := *a.TensorMap
			m.Offset = sub(m.Offset)
			m.Dims, m.Strides = substAll(m.Dims, sub), substAll(m.Strides, sub)
			a.TensorMap = &m
		}
		args[i] = a
	}
	l.Args = args
	return l
}

func substAll(es []Expr, sub func(Expr) Expr) []Expr {
	out := make([]Expr, len(es))
	for i, e := range es {
		out[i] = sub(e)
	}
	return out
}

// MaxCarveout reports whether the function's preferred shared-memory
// carveout must be set to the largest
// (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 100) before the
// launch, so that CTAsPerSM CTAs share an SM.
func (l Launch) MaxCarveout() bool { return l.CTAsPerSM > 1 }

// DefaultSharedLimit is the dynamic shared memory a launch may use
// without opting in (48 KiB).
const DefaultSharedLimit = 48 << 10

// OptIn reports whether the function's maximum dynamic shared memory must
// be raised to SharedBytes before the launch
// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
func (l Launch) OptIn() bool { return l.SharedBytes > DefaultSharedLimit }

type launchJSON struct {
	Entry       string  `json:"entry"`
	Grid        [3]Expr `json:"grid"`
	GridPerSM   int     `json:"grid_per_sm,omitempty"`
	Block       [3]int  `json:"block"`
	Cluster     [3]int  `json:"cluster"`
	SharedBytes int     `json:"shared_bytes"`
	OptIn       bool    `json:"shared_opt_in"`
	Dependent   bool    `json:"dependent"`
	CTAsPerSM   int     `json:"ctas_per_sm,omitempty"`
	When        *Expr   `json:"when,omitempty"`
	Args        []Arg   `json:"args"`
}

// MarshalJSON writes every field, the cluster as {1, 1, 1} when the
// launch has none, and the shared-memory opt-in.
func (l Launch) MarshalJSON() ([]byte, error) {
	c := l.Cluster
	if c == ([3]int{}) {
		c = [3]int{1, 1, 1}
	}
	return json.Marshal(launchJSON{l.Entry, l.Grid, l.GridPerSM, l.Block, c, l.SharedBytes, l.OptIn(), l.Dependent, l.CTAsPerSM, l.When, l.Args})
}

// UnmarshalJSON reads what MarshalJSON writes and checks that the opt-in
// agrees with the shared memory.
func (l *Launch) UnmarshalJSON(data []byte) error {
	var j launchJSON
	if err := strictUnmarshal(data, &j); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	c := j.Cluster
	if c == ([3]int{1, 1, 1}) {
		c = [3]int{}
	}
	*l = Launch{j.Entry, j.Grid, j.GridPerSM, j.Block, c, j.SharedBytes, j.Dependent, j.CTAsPerSM, j.When, j.Args}
	if l.OptIn() != j.OptIn {
		return fmt.Errorf("launch %s: shared_opt_in %v with %d bytes of dynamic shared memory (the opt-in is needed exactly above %d)", l.Entry, j.OptIn, l.SharedBytes, DefaultSharedLimit)
	}
	return nil
}

// ScalarType is the PTX type of a scalar parameter.
type ScalarType string

// The scalar types.
const (
	U64 ScalarType = "u64"
	U32 ScalarType = "u32"
)

// Size is the parameter's size in bytes.
func (t ScalarType) Size() int {
	if t == U32 {
		return 4
	}
	return 8
}

// Arg is one kernel parameter: the address of a buffer (plus a byte
// offset), a TMA tensor map of one, or a scalar (Type, u64 when empty).
type Arg struct {
	Buffer string
	Offset Expr
	// TensorMap, when set, passes a tensor map by value (a 128-byte,
	// 64-byte aligned .param, as cuTensorMapEncodeTiled makes it); Buffer
	// is then empty.
	TensorMap *TensorMap
	Scalar    Expr
	Type      ScalarType
}

// ArgKind names what an Arg passes.
type ArgKind string

// The argument kinds.
const (
	PointerArg   ArgKind = "pointer"
	TensorMapArg ArgKind = "tensor_map"
	ScalarArg    ArgKind = "scalar"
)

// Kind is what a passes.
func (a Arg) Kind() ArgKind {
	switch {
	case a.TensorMap != nil:
		return TensorMapArg
	case a.Buffer != "":
		return PointerArg
	}
	return ScalarArg
}

// ScalarType is a's scalar type (u64 when not given).
func (a Arg) ScalarType() ScalarType {
	if a.Type == "" {
		return U64
	}
	return a.Type
}

// String prints the argument: {buffer+offset}, {tensormap(buffer+offset)
// box} (each offset only when not 0), or {type value}.
func (a Arg) String() string {
	switch a.Kind() {
	case TensorMapArg:
		buf := a.TensorMap.Buffer
		if !isZero(a.TensorMap.Offset) {
			buf = fmt.Sprintf("%s+%s", buf, a.TensorMap.Offset)
		}
		return fmt.Sprintf("{tensormap(%s) box=%v swizzle=%d}", buf, a.TensorMap.Box, a.TensorMap.Swizzle)
	case PointerArg:
		if isZero(a.Offset) {
			return "{" + a.Buffer + "}"
		}
		return fmt.Sprintf("{%s+%s}", a.Buffer, a.Offset)
	}
	return fmt.Sprintf("{%s %s}", a.ScalarType(), a.Scalar)
}

type argJSON struct {
	Kind      ArgKind    `json:"kind"`
	Buffer    string     `json:"buffer,omitempty"`
	Offset    *Expr      `json:"offset,omitempty"`
	TensorMap *TensorMap `json:"tensor_map,omitempty"`
	Type      ScalarType `json:"type,omitempty"`
	Value     *Expr      `json:"value,omitempty"`
}

// MarshalJSON writes the kind and that kind's fields only.
func (a Arg) MarshalJSON() ([]byte, error) {
	j := argJSON{Kind: a.Kind()}
	switch j.Kind {
	case PointerArg:
		j.Buffer, j.Offset = a.Buffer, &a.Offset
	case TensorMapArg:
		j.TensorMap = a.TensorMap
	default:
		j.Type, j.Value = a.ScalarType(), &a.Scalar
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Arg) UnmarshalJSON(data []byte) error {
	var j argJSON
	if err := strictUnmarshal(data, &j); err != nil {
		return fmt.Errorf("argument: %w", err)
	}
	var out Arg
	switch j.Kind {
	case PointerArg:
		if j.Buffer == "" || j.Offset == nil || j.TensorMap != nil || j.Value != nil || j.Type != "" {
			return fmt.Errorf("a pointer argument has a buffer and an offset only: %s", data)
		}
		out.Buffer, out.Offset = j.Buffer, *j.Offset
	case TensorMapArg:
		if j.TensorMap == nil || j.Buffer != "" || j.Offset != nil || j.Value != nil || j.Type != "" {
			return fmt.Errorf("a tensor-map argument has a tensor_map only: %s", data)
		}
		out.TensorMap = j.TensorMap
	case ScalarArg:
		if j.Value == nil || j.Buffer != "" || j.Offset != nil || j.TensorMap != nil {
			return fmt.Errorf("a scalar argument has a type and a value only: %s", data)
		}
		if j.Type != U32 && j.Type != U64 {
			return fmt.Errorf("scalar type %q: want u32 or u64", j.Type)
		}
		out.Scalar, out.Type = *j.Value, j.Type
	default:
		return fmt.Errorf("argument kind %q: want pointer, tensor_map or scalar", j.Kind)
	}
	*a = out
	return nil
}

// strictUnmarshal decodes data into v, refusing unknown fields.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytesReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
