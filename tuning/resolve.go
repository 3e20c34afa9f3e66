package tuning

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/variants"
)

// Request is what a command asks to tune, check or emit.
type Request struct {
	Kernels string // "a,b" or "all"
	// Shapes is a preset name, a Hugging Face config.json (a path ending in
	// .json, or naming a file), or shape specs separated by ';'.
	Shapes string
	// Tokens lists the token counts (rows) of a preset's or a config's
	// shapes, "512,2048,8192"; "" takes the default (variants.DefaultTokens).
	Tokens string
	DTypes string // "f32,bf16"; "": every dtype a family supports
	Params string // fixed axes, "vec=4,grid=once"
	// Extra are families outside the catalog that Kernels may name (the
	// planted faults of kernels/faults); "all" leaves them out.
	Extra []kernels.Family
}

// Selection is the work a Request resolves to.
type Selection struct {
	Jobs  []runner.Job
	Fix   variants.Params
	Notes []string // what "all" left out, and why
}

// Shapes returns every (family, shape) of the selection, in order.
func (s Selection) Shapes() []FamilyShape {
	var out []FamilyShape
	for _, j := range s.Jobs {
		for _, sh := range j.Shapes {
			out = append(out, FamilyShape{j.Family, sh})
		}
	}
	return out
}

// FamilyShape is one shape of one family.
type FamilyShape struct {
	F kernels.Family
	S variants.Shape
}

// String is "family shape-key".
func (fs FamilyShape) String() string { return fs.F.Name() + " " + fs.S.Key() }

// resolver holds a parsed Request.
type resolver struct {
	req     Request
	all     bool              // --kernel all: leave out what a family cannot take
	dts     []dtype.DType     // nil: every dtype
	tokens  []int             // --tokens; nil: the preset's default
	presets []variants.Preset // when shapes name a preset or a config: one per token count
	specs   []variants.Spec   // otherwise
	fix     variants.Params
	notes   []string // shapes "all" left out of a family it kept
}

// Resolve turns req into a Selection; see the package documentation for
// the rules. Every error it returns is an *InputError.
func Resolve(req Request) (Selection, error) {
	fams, all, err := parseKernels(req.Kernels, req.Extra)
	if err != nil {
		return Selection{}, err
	}
	r := &resolver{req: req, all: all}
	if err := r.parse(); err != nil {
		return Selection{}, err
	}
	sel := Selection{Fix: r.fix}
	taken := make([]bool, len(r.specs))
	var why []string
	for _, f := range fams {
		shapes, skip, err := r.familyShapes(f, taken)
		if err != nil {
			return Selection{}, err
		}
		if skip != nil {
			why = append(why, skip.Error())
			sel.Notes = append(sel.Notes, fmt.Sprintf("skipping %s: %v", f.Name(), skip))
			continue
		}
		sel.Jobs = append(sel.Jobs, runner.Job{Family: f, Shapes: shapes})
	}
	sel.Notes = append(sel.Notes, r.notes...)
	for i, ok := range taken {
		if !ok {
			return Selection{}, inputf("--shapes: no kernel takes %s (%s; see tune list for each kernel's dims)",
				specString(r.specs[i]), strings.Join(why, "; "))
		}
	}
	if len(sel.Jobs) == 0 {
		return Selection{}, inputf("no kernel takes this request: %s", strings.Join(why, "; "))
	}
	return sel, nil
}

// ParseKernels resolves "a,b" or "all" (then all is true); a name given
// twice is an error (an *InputError).
func ParseKernels(list string) (fams []kernels.Family, all bool, err error) {
	return parseKernels(list, nil)
}

// parseKernels is ParseKernels where names may also be those of extra.
func parseKernels(list string, extra runner.Families) (fams []kernels.Family, all bool, err error) {
	if strings.TrimSpace(list) == "all" {
		return catalog.All(), true, nil
	}
	seen := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			return nil, false, inputf("--kernel %q: empty name (kernels: %s, or all)", list, strings.Join(catalog.Names(), ", "))
		case n == "all":
			return nil, false, inputf("--kernel %q: all stands alone (kernels: %s)", list, strings.Join(catalog.Names(), ", "))
		case seen[n]:
			return nil, false, inputf("--kernel %q: %s named twice", list, n)
		}
		seen[n] = true
		f, err := extra.Lookup(n)
		if err != nil {
			if f, err = catalog.Lookup(n); err != nil {
				return nil, false, &InputError{err}
			}
		}
		fams = append(fams, f)
	}
	return fams, false, nil
}

// parse reads the request's dtypes, shapes, tokens and params.
func (r *resolver) parse() error {
	var err error
	if r.req.DTypes != "" {
		if r.dts, err = dtype.ParseList(r.req.DTypes); err != nil {
			return inputf("--dtype: %w", err)
		}
	}
	if r.fix, err = variants.ParseParams(r.req.Params); err != nil {
		return inputf("--params: %w", err)
	}
	if r.tokens, err = parseTokens(r.req.Tokens); err != nil {
		return err
	}
	counts := r.tokens
	if counts == nil {
		counts = []int{0} // the default
	}
	switch {
	case variants.IsPreset(r.req.Shapes):
		for _, n := range counts {
			p, err := variants.LookupPreset(r.req.Shapes, n)
			if err != nil {
				return &InputError{err}
			}
			r.presets = append(r.presets, p)
		}
		return nil
	case isConfigPath(r.req.Shapes):
		p, err := variants.ReadConfig(r.req.Shapes)
		if err != nil {
			return inputf("--shapes %w", err)
		}
		for _, n := range counts {
			if n > 0 {
				p.Tokens = n
			}
			r.presets = append(r.presets, p)
		}
		return nil
	}
	if r.specs, err = variants.ParseSpecs(r.req.Shapes); err != nil {
		return inputf("--shapes: %w (or a preset: %s; or a model's config.json)", err, strings.Join(variants.PresetNames(), ", "))
	}
	if r.req.Tokens != "" {
		return inputf("--tokens sets the rows of a preset's shapes (or a config's), but --shapes %q gives explicit shapes: put m= in the spec instead", r.req.Shapes)
	}
	for _, sp := range r.specs {
		if sp.DType != dtype.Invalid && r.dts != nil && !slices.Contains(r.dts, sp.DType) {
			return inputf("--shapes %s asks for dtype=%v but --dtype is %s: give the dtype in one place", specString(sp), sp.DType, r.req.DTypes)
		}
	}
	return nil
}

// isConfigPath reports whether --shapes s names a model's config file: it
// ends in .json, or it is no spec (it has no '=') and names something that
// exists (ReadConfig refuses a directory, naming it).
func isConfigPath(s string) bool {
	if strings.HasSuffix(strings.ToLower(s), ".json") {
		return true
	}
	if s == "" || strings.Contains(s, "=") {
		return false
	}
	_, err := os.Stat(s)
	return err == nil
}

// familyShapes returns f's shapes for the request and marks the specs f
// takes. skip says why f takes nothing (only with "all"); err is an error
// whatever the kernel list.
func (r *resolver) familyShapes(f kernels.Family, taken []bool) (shapes []variants.Shape, skip, err error) {
	fail := func(e error) ([]variants.Shape, error, error) {
		if r.all {
			return nil, e, nil
		}
		return nil, nil, &InputError{e}
	}
	fdts := f.DTypes()
	if r.dts != nil {
		fdts = intersect(r.dts, f.DTypes())
		if len(fdts) == 0 {
			return fail(fmt.Errorf("%s supports none of --dtype %s (dtypes: %v)", f.Name(), r.req.DTypes, f.DTypes()))
		}
	}
	if r.specs == nil {
		shapes, err = r.presetShapes(f, fdts)
	} else {
		shapes, err = r.specShapes(f, fdts, taken)
	}
	if err != nil {
		if errors.Is(err, errNotTaken) {
			return fail(errors.Unwrap(err))
		}
		return nil, nil, err
	}
	return r.fixShapes(f, shapes)
}

// errNotTaken marks a spec the family does not take (its dims or dtypes
// do not fit), as opposed to a bad request.
var errNotTaken = errors.New("not taken")

type notTaken struct{ err error }

func (n notTaken) Error() string        { return n.err.Error() }
func (n notTaken) Is(target error) bool { return target == errNotTaken }
func (n notTaken) Unwrap() error        { return n.err }

// presetShapes returns f's shapes of the preset at each token count, each
// checked by f.Shape so that the family's limits apply to preset shapes
// too; a shape two token counts share (one without a token dim) once.
func (r *resolver) presetShapes(f kernels.Family, dts []dtype.DType) ([]variants.Shape, error) {
	var out []variants.Shape
	seen := map[string]bool{}
	for _, p := range r.presets {
		for _, s := range f.Shapes(p, dts) {
			checked, err := f.Shape(variants.Spec{Dims: s.Dims}, s.DType)
			if err != nil {
				return nil, inputf("--shapes %s with %d tokens: %w", r.req.Shapes, p.Tokens, err)
			}
			if !seen[checked.Key()] {
				seen[checked.Key()] = true
				out = append(out, checked)
			}
		}
	}
	return out, nil
}

// parseTokens reads --tokens: positive counts separated by commas, each
// once ("" is none: the preset's default).
func parseTokens(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, inputf("--tokens %q: want positive token counts separated by commas, e.g. 512,2048,8192", s)
		}
		if slices.Contains(out, n) {
			return nil, inputf("--tokens %q: %d is given twice", s, n)
		}
		out = append(out, n)
	}
	return out, nil
}

// specShapes returns f's shapes of the specs it takes. A named family
// must take every spec.
func (r *resolver) specShapes(f kernels.Family, dts []dtype.DType, taken []bool) ([]variants.Shape, error) {
	var out []variants.Shape
	var first error
	for i, sp := range r.specs {
		shapes, err := specShapes(f, sp, dts)
		if errors.Is(err, errNotTaken) {
			if !r.all {
				return nil, &InputError{fmt.Errorf("--shapes: %w", errors.Unwrap(err))}
			}
			first = cmpOr(first, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		taken[i] = true
		out = append(out, shapes...)
	}
	if len(out) == 0 {
		return nil, first
	}
	return out, nil
}

// specShapes returns the shapes of one spec for f in dts.
func specShapes(f kernels.Family, sp variants.Spec, dts []dtype.DType) ([]variants.Shape, error) {
	if sp.DType != dtype.Invalid {
		if !slices.Contains(f.DTypes(), sp.DType) {
			return nil, notTaken{fmt.Errorf("%s: %s has dtype %v, which %s does not support (dtypes: %v)", f.Name(), specString(sp), sp.DType, f.Name(), f.DTypes())}
		}
		dts = []dtype.DType{sp.DType}
	}
	var out []variants.Shape
	var bad []string
	var firstErr error
	for _, d := range dts {
		s, err := f.Shape(sp, d)
		if err != nil {
			bad = append(bad, d.String())
			firstErr = cmpOr(firstErr, err)
			continue
		}
		out = append(out, s)
	}
	switch {
	case len(out) == 0:
		return nil, notTaken{firstErr}
	case len(bad) > 0:
		return nil, inputf("--shapes %s: %s takes it in some dtypes but not in %s: %w", specString(sp), f.Name(), strings.Join(bad, ", "), firstErr)
	}
	return out, nil
}

// fixShapes keeps the shapes whose space takes the fixed params. A named
// family must take them at every shape.
func (r *resolver) fixShapes(f kernels.Family, shapes []variants.Shape) ([]variants.Shape, error, error) {
	if len(r.fix) == 0 {
		return shapes, nil, nil
	}
	var out []variants.Shape
	var first error
	var dropped []string
	for _, s := range shapes {
		err := CheckParams(f, s, r.fix)
		if err == nil {
			out = append(out, s)
			continue
		}
		if !r.all {
			return nil, nil, err
		}
		first = cmpOr(first, errors.Unwrap(err))
		dropped = append(dropped, fmt.Sprintf("skipping %s: %v", f.Name(), errors.Unwrap(err)))
	}
	if len(out) == 0 {
		return nil, first, nil
	}
	r.notes = append(r.notes, dropped...)
	return out, nil, nil
}

func intersect(want, have []dtype.DType) []dtype.DType {
	var out []dtype.DType
	for _, d := range want {
		if slices.Contains(have, d) {
			out = append(out, d)
		}
	}
	return out
}

// specString writes a spec back as the user would.
func specString(sp variants.Spec) string {
	var parts []string
	for _, d := range sp.Dims {
		parts = append(parts, d.Name+"="+d.ValueString())
	}
	if sp.DType != dtype.Invalid {
		parts = append(parts, "dtype="+sp.DType.String())
	}
	return strings.Join(parts, ",")
}

// cmpOr returns a unless it is nil.
func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
