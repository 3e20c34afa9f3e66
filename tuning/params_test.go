package tuning

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/variants"
)

func mustShape(t *testing.T, kernel, spec string, dt dtype.DType) (FamilyShape, variants.Space) {
	t.Helper()
	f, err := catalog.Lookup(kernel)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := variants.ParseSpecs(spec)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Shape(sp[0], dt)
	if err != nil {
		t.Fatal(err)
	}
	return FamilyShape{f, s}, f.Space(s)
}

// TestFirstPointIsValid: for the row families at a large shape (where the
// first value of every axis is not a valid point), FirstPoint gives a point
// the space accepts, with the given values.
func TestFirstPointIsValid(t *testing.T) {
	for _, k := range []string{"softmax_bwd", "rmsnorm_bwd", "layernorm_bwd", "relu_bwd", "lp_pool1d_bwd"} {
		spec := "m=2048,n=8960"
		if k == "lp_pool1d_bwd" {
			spec = "n=2,c=3,l=50,window=3,p=2"
		}
		fs, sp := mustShape(t, k, spec, dtype.F32)
		p, err := FirstPoint(sp, nil)
		if err != nil {
			t.Fatalf("%s: %v", fs, err)
		}
		if err := sp.Check(p); err != nil {
			t.Errorf("%s: first point %s: %v", fs, p, err)
		}
		if k == "relu_bwd" {
			continue
		}
		axis := sp.Axes[0]
		last := axis.Values[len(axis.Values)-1]
		fix := variants.Params{axis.Name: last}
		if q, err := FirstPoint(sp, fix); err == nil && q[axis.Name] != last {
			t.Errorf("%s: FirstPoint(%s) = %s", fs, fix, q)
		}
	}
}

// TestValidValues: a rejected combination lists, per given axis, the values
// that valid points with the other given values have.
func TestValidValues(t *testing.T) {
	fs, sp := mustShape(t, "softmax_bwd", "m=2048,n=8960", dtype.F32)
	all := sp.Enumerate()
	fix := invalidPair(sp, all)
	if fix == nil {
		t.Fatalf("%s: every pair of valid axis values is valid together", fs)
	}
	err := CheckParams(fs.F, fs.S, fix)
	if err == nil || !strings.Contains(err.Error(), "no valid variant has "+fix.String()) {
		t.Fatalf("CheckParams(%s): %v", fix, err)
	}
	avs := ValidValues(sp, fix)
	if len(avs) != 2 {
		t.Fatalf("ValidValues(%s) = %+v", fix, avs)
	}
	for i, av := range avs {
		other := avs[1-i].Axis
		if !strings.Contains(err.Error(), av.Axis+": "+strings.Join(av.Values, ", ")+" (with "+other+"="+fix[other]+")") {
			t.Errorf("error %q does not list %s: %v", err, av.Axis, av.Values)
		}
		for _, v := range av.Values {
			q := fix.Clone()
			q[av.Axis] = v
			if len(filterPts(all, q)) == 0 {
				t.Errorf("%s=%s listed as valid with %s, but no point has it", av.Axis, v, fix)
			}
		}
	}
}

// invalidPair returns two axis values that valid points have, but no
// valid point has together.
func invalidPair(sp variants.Space, all []variants.Params) variants.Params {
	for i, a := range sp.Axes {
		for _, b := range sp.Axes[i+1:] {
			for _, va := range a.Values {
				for _, vb := range b.Values {
					fix := variants.Params{a.Name: va, b.Name: vb}
					if len(filterPts(all, fix)) == 0 && len(filterPts(all, without(fix, a.Name))) > 0 && len(filterPts(all, without(fix, b.Name))) > 0 {
						return fix
					}
				}
			}
		}
	}
	return nil
}

func filterPts(all []variants.Params, fix variants.Params) []variants.Params {
	var out []variants.Params
next:
	for _, p := range all {
		for k, v := range fix {
			if p[k] != v {
				continue next
			}
		}
		out = append(out, p)
	}
	return out
}
