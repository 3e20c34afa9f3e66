package variants

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gradtune/gradtune/dtype"
)

// A family's typed shape is a struct whose fields tagged `dim:"name"` are
// its extents, in the order keys print them, and whose one field of type
// dtype.DType is its element type:
//
//	type Shape struct {
//		M, N  int `dim:"m"` …
//		DType dtype.DType
//	}
//
// Extent fields are int (a positive integer), Milli (a positive decimal
// with at most three decimals, p=1.5) or a string type (a choice such as
// grad=dx, whose names a `values:"dx,dw"` tag lists). `dim:"m,optional"`
// marks an extent a spec may leave out; it is then zero and the key omits
// it. `dim:"block,optional=64"` names the value an omitted extent has (an
// integer, or one of the choices): a spec may give it (block=64, ceil=0,
// scales=f32) or leave it out, the typed shape holds it either way, and
// the key omits it, so both specs name one shape. ShapeOf and
// DecodeShape are the one place that converts between a typed shape and
// the canonical Shape the store keys on.

// Milli is an extent in thousandths: a shape field of this type takes
// decimals (p=1.5 is Milli(1500)).
type Milli int

// Float is the extent as a number.
func (m Milli) Float() float64 { return float64(m) / 1000 }

// ShapeOf prints a typed shape in canonical form.
func ShapeOf[S any](s S) Shape {
	c, err := shapeCodecOf[S]()
	if err != nil {
		return Shape{}
	}
	rv := reflect.ValueOf(s)
	out := Shape{DType: rv.Field(c.dtype).Interface().(dtype.DType)}
	for _, f := range c.dims {
		fv := rv.Field(f.index)
		if f.choices != nil {
			if t := fv.String(); (t != "" || !f.optional) && !(f.hasDef && t == f.def) {
				out.Dims = append(out.Dims, Dim{Name: f.name, Text: t})
			}
			continue
		}
		v := int(fv.Int())
		if f.optional && v == 0 || f.hasDef && strconv.Itoa(v) == f.def {
			continue
		}
		d := Dim{Name: f.name, Value: v}
		if f.milli {
			d.Value, d.Milli = v/1000, v%1000
		}
		out.Dims = append(out.Dims, d)
	}
	return out
}

// DecodeShape reads a typed shape from named extents and a dtype. Every
// extent must be one the shape declares, given once; every extent not
// marked optional must be given; integer extents take no decimals; all
// are positive.
func DecodeShape[S any](dims []Dim, dt dtype.DType) (S, error) {
	var s S
	c, err := shapeCodecOf[S]()
	if err != nil {
		return s, err
	}
	rv := reflect.ValueOf(&s).Elem()
	rv.Field(c.dtype).Set(reflect.ValueOf(dt))
	for _, f := range c.dims {
		if f.hasDef && f.choices != nil {
			rv.Field(f.index).SetString(f.def)
		} else if f.hasDef {
			n, _ := strconv.Atoi(f.def) // checked by buildShapeCodec
			rv.Field(f.index).SetInt(int64(n))
		}
	}
	given := map[string]bool{}
	for _, d := range dims {
		f, ok := c.dim(d.Name)
		switch {
		case !ok || given[d.Name]:
			return s, fmt.Errorf("takes %s (got %s)", c.usage(), dimList(dims))
		case f.choices != nil:
			if !slices.Contains(f.choices, d.Text) {
				return s, fmt.Errorf("%s=%s: want one of %s", d.Name, d.ValueString(), strings.Join(f.choices, ", "))
			}
			given[d.Name] = true
			rv.Field(f.index).SetString(d.Text)
			continue
		case d.Text != "":
			return s, fmt.Errorf("%s=%s is not a number", d.Name, d.Text)
		case d.Milli != 0 && !f.milli:
			return s, fmt.Errorf("%s=%s is not an integer", d.Name, d.ValueString())
		case f.hasDef && d.Milli == 0 && strconv.Itoa(d.Value) == f.def:
			// the default, which may be 0 (ceil=0)
		case d.Value < 0 || d.Value == 0 && d.Milli == 0:
			return s, fmt.Errorf("%s=%s is not positive", d.Name, d.ValueString())
		}
		given[d.Name] = true
		v := int64(d.Value)
		if f.milli {
			v = v*1000 + int64(d.Milli)
		}
		if rv.Field(f.index).OverflowInt(v) {
			return s, fmt.Errorf("%s=%s is too large", d.Name, d.ValueString())
		}
		rv.Field(f.index).SetInt(v)
	}
	for _, f := range c.dims {
		if !f.optional && !given[f.name] {
			return s, fmt.Errorf("takes %s (got %s)", c.usage(), dimList(dims))
		}
	}
	return s, nil
}

// DimNamesOf lists the extents a typed shape declares, in key order.
func DimNamesOf[S any]() []string {
	c, err := shapeCodecOf[S]()
	if err != nil {
		return nil
	}
	var n []string
	for _, f := range c.dims {
		n = append(n, f.name)
	}
	return n
}

func dimList(dims []Dim) string {
	if len(dims) == 0 {
		return "no extents"
	}
	var parts []string
	for _, d := range dims {
		parts = append(parts, d.Name+"="+d.ValueString())
	}
	return strings.Join(parts, ",")
}

type shapeCodec struct {
	typ   reflect.Type
	dims  []shapeField
	dtype int // index of the dtype.DType field
}

type shapeField struct {
	index           int
	name            string
	optional, milli bool
	choices         []string // a string extent's names
	// hasDef marks an optional extent with a default value, def (its
	// text): what the typed shape holds when a spec leaves it out.
	hasDef bool
	def    string
}

func (c *shapeCodec) dim(name string) (shapeField, bool) {
	for _, f := range c.dims {
		if f.name == name {
			return f, true
		}
	}
	return shapeField{}, false
}

// usage says which extents the shape takes: "m=M (optional),n=N".
func (c *shapeCodec) usage() string {
	var parts []string
	for _, f := range c.dims {
		p := f.name + "=" + strings.ToUpper(f.name)
		if f.choices != nil {
			p = f.name + "=" + strings.Join(f.choices, "|")
		}
		switch {
		case f.hasDef:
			p += " (optional, default " + f.def + ")"
		case f.optional:
			p += " (optional)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ",")
}

var shapeCodecs sync.Map // reflect.Type → codecResult[*shapeCodec]

func shapeCodecOf[S any]() (*shapeCodec, error) {
	return cachedCodec(&shapeCodecs, reflect.TypeFor[S](), buildShapeCodec)
}

var (
	dtypeType = reflect.TypeFor[dtype.DType]()
	milliType = reflect.TypeFor[Milli]()
)

func buildShapeCodec(t reflect.Type) (*shapeCodec, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("shape type %v is not a struct", t)
	}
	c := &shapeCodec{typ: t, dtype: -1}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Type == dtypeType {
			c.dtype = i
			continue
		}
		tag, ok := sf.Tag.Lookup("dim")
		if !ok {
			continue
		}
		name, opt, _ := strings.Cut(tag, ",")
		if sf.Type.Kind() == reflect.Int && sf.Tag.Get("values") != "" {
			return nil, fmt.Errorf("%v.%s: a values tag is for choice (string) extents", t, sf.Name)
		}
		opt, def, hasDef := strings.Cut(opt, "=")
		f := shapeField{index: i, name: name, optional: opt == "optional", milli: sf.Type == milliType, hasDef: hasDef, def: def}
		if vs, ok := sf.Tag.Lookup("values"); ok {
			f.choices = strings.Split(vs, ",")
		}
		n, nerr := strconv.Atoi(def)
		switch k := sf.Type.Kind(); {
		case name == "" || opt != "" && opt != "optional":
			return nil, fmt.Errorf("%v.%s: malformed dim tag %q", t, sf.Name, tag)
		case hasDef && (f.milli || k == reflect.Int && (nerr != nil || n < 0) || k == reflect.String && !slices.Contains(f.choices, def)):
			return nil, fmt.Errorf("%v.%s: dim tag %q: a default is a non-negative integer or one of the values", t, sf.Name, tag)
		case k == reflect.String && len(f.choices) == 0:
			return nil, fmt.Errorf("%v.%s: a choice extent needs a values tag", t, sf.Name)
		case k != reflect.Int && k != reflect.String:
			return nil, fmt.Errorf("%v.%s: an extent is an int, a variants.Milli or a string choice, not %v", t, sf.Name, sf.Type)
		}
		if _, dup := c.dim(name); dup {
			return nil, fmt.Errorf("%v: extent %q declared twice", t, name)
		}
		c.dims = append(c.dims, f)
	}
	if c.dtype < 0 || len(c.dims) == 0 {
		return nil, fmt.Errorf("shape type %v needs a dtype.DType field and at least one field tagged dim", t)
	}
	return c, nil
}
