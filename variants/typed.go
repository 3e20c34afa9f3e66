package variants

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Typed is a family's parameter space over its own params struct P. The
// struct declares the axes: each field tagged `axis:"name"` is one axis,
// in field order (the last varies fastest when enumerating), with its
// documentation in a `doc:"…"` tag and, when they do not depend on the
// shape, its values in a `values:"a,b,c"` tag. An axis added after
// results were recorded names, in a `default:"v"` tag, the value that
// every variant had before it: params that lack the axis decode to it,
// and Space.WithDefaults adds it, so that older records still name points.
// Fields are ints, bools (printed 0 and 1) or strings (named string types
// included).
//
//	type Params struct {
//		Block int  `axis:"block" values:"128,256" doc:"threads per block"`
//		Vec   int  `axis:"vec" doc:"elements per vector access"`
//		PDL   bool `axis:"pdl" values:"0,1" doc:"dependent second launch"`
//	}
//
// Params is the canonical k=v form the store keys on; Encode and Decode
// are the one place that converts between it and P.
type Typed[P any] struct {
	// Values sets the values of axes whose tag gives none (or overrides
	// them), for one shape. Keys are axis names.
	Values map[string][]string
	// Rules are the constraints: each returns nil for an allowed point or
	// the reason it is not allowed.
	Rules []Rule[P]
}

// Rule is one named constraint over typed params.
type Rule[P any] struct {
	Name  string
	Check func(P) error
	// Axes, when set, are every axis Check reads: the walk (Enumerate)
	// checks the rule as soon as those axes have their values and skips
	// every point below a refusal, instead of checking it at every point
	// of the product. A rule that reads an axis it does not list would
	// see a stale value there; catalog's TestEnumerateIsTheProductWalk
	// holds each family's walk to the product's. Empty: checked once
	// every axis has its value.
	Axes []string
	// Search marks a rule that narrows only the tuner's search
	// (Space.Search), never the space: Enumerate, Check, the interpreter's
	// sweeps and recorded or committed points ignore it. It states a
	// measured fact (a region of the space that never came near the
	// winner) and cites its evidence in Name; a search whose fixed params
	// name an axis it reads keeps the region, so --params still reaches
	// it. A search rule lists its Axes.
	Search bool
}

// Ints prints integer axis values for Typed.Values.
func Ints(vals ...int) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = strconv.Itoa(v)
	}
	return out
}

// Space is the untyped view of t: its axes with their values, and one
// constraint per rule over decoded params; the search rules (Rule.Search)
// only narrow Space.Search.
func (t Typed[P]) Space() Space {
	space, search := t.split()
	for _, r := range search {
		if len(r.Axes) == 0 {
			return brokenSpace(fmt.Errorf("search rule %q lists no axes", r.Name))
		}
	}
	s := space.view()
	for _, r := range search {
		s.searchRules = append(s.searchRules, r.Name)
	}
	if len(search) > 0 {
		s.search = func(fix Params) Space {
			kept := space
			kept.Rules = slices.Clone(space.Rules)
			for _, r := range search {
				if !slices.ContainsFunc(r.Axes, func(a string) bool { _, ok := fix[a]; return ok }) {
					kept.Rules = append(kept.Rules, r)
				}
			}
			if v := kept.view(); v.has(fix) {
				return v
			}
			return s // fix's values lie only where search rules reach
		}
	}
	return s
}

// split parts t's rules into the space's and the search rules.
func (t Typed[P]) split() (space Typed[P], search []Rule[P]) {
	space.Values = t.Values
	for _, r := range t.Rules {
		if r.Search {
			search = append(search, r)
		} else {
			space.Rules = append(space.Rules, r)
		}
	}
	return space, search
}

// view is the untyped view of t, every rule of t a constraint.
func (t Typed[P]) view() Space {
	c, err := codecOf[P]()
	if err != nil {
		return brokenSpace(err)
	}
	var s Space
	for _, f := range c.fields {
		vals, ok := t.Values[f.axis]
		if !ok {
			vals = f.values
		}
		s.Axes = append(s.Axes, Axis{Name: f.axis, Values: vals, Doc: f.doc, Default: f.def})
	}
	for name := range t.Values {
		if _, ok := s.Axis(name); !ok {
			return brokenSpace(fmt.Errorf("values given for %q, which %v has no axis for", name, c.typ))
		}
	}
	for _, a := range s.Axes {
		if len(a.Values) == 0 {
			return brokenSpace(fmt.Errorf("axis %q of %v has no values", a.Name, c.typ))
		}
	}
	for _, r := range t.Rules {
		s.Constraints = append(s.Constraints, Constraint{Name: r.Name, OK: func(p Params) error {
			v, err := Decode[P](p)
			if err != nil {
				return err
			}
			return r.Check(v)
		}})
	}
	s.walk = func(yield func(Params) bool) { t.walk(c, s.Axes, yield) }
	s.rules = func(p Params) (string, error) {
		v, err := Decode[P](p)
		if err != nil {
			return "the params' types", err
		}
		for _, r := range t.Rules {
			if err := r.Check(v); err != nil {
				return r.Name, err
			}
		}
		return "", nil
	}
	return s
}

// brokenSpace is a space with no points whose Check reports err: a family
// whose params struct or values are malformed.
func brokenSpace(err error) Space {
	return Space{Constraints: []Constraint{{Name: "a well-formed space", OK: func(Params) error { return err }}}}
}

// Encode prints typed params in their canonical k=v form.
func Encode[P any](v P) Params {
	c, err := codecOf[P]()
	if err != nil {
		return Params{}
	}
	rv := reflect.ValueOf(v)
	p := make(Params, len(c.fields))
	for _, f := range c.fields {
		fv := rv.FieldByIndex(f.index)
		switch fv.Kind() {
		case reflect.Bool:
			p[f.axis] = map[bool]string{false: "0", true: "1"}[fv.Bool()]
		case reflect.Int:
			p[f.axis] = strconv.Itoa(int(fv.Int()))
		default:
			p[f.axis] = fv.String()
		}
	}
	return p
}

// Decode reads typed params from their k=v form. Every axis must be
// present with a value of its field's kind, or have a default; whether
// the value is one of the axis's values is Space.Check's business.
func Decode[P any](p Params) (P, error) {
	var v P
	c, err := codecOf[P]()
	if err != nil {
		return v, err
	}
	rv := reflect.ValueOf(&v).Elem()
	for _, f := range c.fields {
		s, ok := p[f.axis]
		if !ok && f.def != "" {
			s, ok = f.def, true
		}
		if !ok {
			return v, fmt.Errorf("param %q missing", f.axis)
		}
		if err := f.set(rv.FieldByIndex(f.index), s); err != nil {
			return v, err
		}
	}
	return v, nil
}

// set stores the value s of axis f in fv, its field of a params struct.
func (f paramField) set(fv reflect.Value, s string) error {
	switch fv.Kind() {
	case reflect.Bool:
		if s != "0" && s != "1" {
			return fmt.Errorf("param %s=%q is not 0 or 1", f.axis, s)
		}
		fv.SetBool(s == "1")
	case reflect.Int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("param %s=%q is not an integer", f.axis, s)
		}
		fv.SetInt(int64(n))
	default:
		fv.SetString(s)
	}
	return nil
}

// walk calls yield with every point of axes (the axes of c's fields, in
// order) that t's rules allow, in enumeration order, until yield returns
// false: the points Space.Enumerate lists. It decodes each axis value
// once and keeps one P whose fields are set depth by depth, so a
// rejected point costs the rules' calls and no Params; a rule that
// declares its axes (Rule.Axes) is checked at the depth where the last
// of them is set and prunes what lies below; a value that does not
// decode (no point with it is allowed) is left out of the walk.
func (t Typed[P]) walk(c *paramCodec, axes []Axis, yield func(Params) bool) {
	var v P
	rv := reflect.ValueOf(&v).Elem()
	decoded := make([][]reflect.Value, len(axes))
	texts := make([][]string, len(axes))
	for i, f := range c.fields {
		for _, s := range axes[i].Values {
			fv := reflect.New(rv.FieldByIndex(f.index).Type()).Elem()
			if f.set(fv, s) == nil {
				decoded[i], texts[i] = append(decoded[i], fv), append(texts[i], s)
			}
		}
		if len(decoded[i]) == 0 {
			return
		}
	}
	at := t.rulesByDepth(axes)
	idx := make([]int, len(axes))
	var dfs func(d int) bool
	dfs = func(d int) bool {
		for j := range decoded[d] {
			idx[d] = j
			rv.FieldByIndex(c.fields[d].index).Set(decoded[d][j])
			if !allow(at[d], v) {
				continue
			}
			if d < len(axes)-1 {
				if !dfs(d + 1) {
					return false
				}
				continue
			}
			p := make(Params, len(axes))
			for i, a := range axes {
				p[a.Name] = texts[i][idx[i]]
			}
			if !yield(p) {
				return false
			}
		}
		return true
	}
	dfs(0)
}

// rulesByDepth groups t's rules by the depth of the walk that checks
// them: the index of the last of their axes, or the last axis.
func (t Typed[P]) rulesByDepth(axes []Axis) [][]Rule[P] {
	pos := map[string]int{}
	for i, a := range axes {
		pos[a.Name] = i
	}
	at := make([][]Rule[P], len(axes))
	for _, r := range t.Rules {
		d := len(axes) - 1
		if len(r.Axes) > 0 {
			d = 0
			for _, a := range r.Axes {
				i, ok := pos[a]
				if !ok {
					i = len(axes) - 1 // an axis the space lacks: check at the end, where Check errs as it will
				}
				d = max(d, i)
			}
		}
		at[d] = append(at[d], r)
	}
	return at
}

func allow[P any](rules []Rule[P], v P) bool {
	for _, r := range rules {
		if r.Check(v) != nil {
			return false
		}
	}
	return true
}

// allows reports whether v satisfies every rule.
func (t Typed[P]) allows(v P) bool {
	for _, r := range t.Rules {
		if r.Check(v) != nil {
			return false
		}
	}
	return true
}

// AxisNames lists the axes P declares, in order.
func AxisNames[P any]() []string {
	c, err := codecOf[P]()
	if err != nil {
		return nil
	}
	var n []string
	for _, f := range c.fields {
		n = append(n, f.axis)
	}
	return n
}

// paramCodec maps the tagged fields of a params struct to axes.
type paramCodec struct {
	typ    reflect.Type
	fields []paramField
}

type paramField struct {
	index  []int // reflect's index path: through embedded structs
	axis   string
	doc    string
	values []string
	def    string // the default tag: the value of records that lack the axis
}

var codecs sync.Map // reflect.Type → codecResult[*paramCodec]

func codecOf[P any]() (*paramCodec, error) {
	return cachedCodec(&codecs, reflect.TypeFor[P](), buildCodec)
}

// codecResult is a built codec or why it could not be built.
type codecResult[C any] struct {
	c   C
	err error
}

// cachedCodec returns the codec of t from cache, building it once.
func cachedCodec[C any](cache *sync.Map, t reflect.Type, build func(reflect.Type) (C, error)) (C, error) {
	if r, ok := cache.Load(t); ok {
		return r.(codecResult[C]).c, r.(codecResult[C]).err
	}
	c, err := build(t)
	cache.Store(t, codecResult[C]{c, err})
	return c, err
}

func buildCodec(t reflect.Type) (*paramCodec, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("params type %v is not a struct", t)
	}
	c := &paramCodec{typ: t}
	if err := c.addFields(t, nil, map[string]bool{}); err != nil {
		return nil, err
	}
	if len(c.fields) == 0 {
		return nil, fmt.Errorf("params type %v has no field tagged axis", t)
	}
	return c, nil
}

// addFields adds the axis fields of struct t, reached from the params
// type by index path at, in order; an embedded struct without an axis
// tag contributes its own axes in its place.
func (c *paramCodec) addFields(t reflect.Type, at []int, seen map[string]bool) error {
	for i := range t.NumField() {
		sf := t.Field(i)
		path := append(append([]int(nil), at...), i)
		name, ok := sf.Tag.Lookup("axis")
		if !ok {
			if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
				if err := c.addFields(sf.Type, path, seen); err != nil {
					return err
				}
			}
			continue
		}
		switch k := sf.Type.Kind(); {
		case name == "" || seen[name]:
			return fmt.Errorf("%v.%s: axis name %q empty or repeated", c.typ, sf.Name, name)
		case !sf.IsExported():
			return fmt.Errorf("%v.%s: an axis field must be exported", c.typ, sf.Name)
		case k != reflect.Int && k != reflect.Bool && k != reflect.String:
			return fmt.Errorf("%v.%s: axis field of kind %v (want int, bool or string)", c.typ, sf.Name, k)
		}
		seen[name] = true
		f := paramField{index: path, axis: name, doc: sf.Tag.Get("doc"), def: sf.Tag.Get("default")}
		if vs, ok := sf.Tag.Lookup("values"); ok {
			f.values = strings.Split(vs, ",")
		}
		c.fields = append(c.fields, f)
	}
	return nil
}
