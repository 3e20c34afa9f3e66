package tuning

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/catalog"
)

func keys(sel Selection) []string {
	var out []string
	for _, fs := range sel.Shapes() {
		out = append(out, fs.String())
	}
	return out
}

func TestResolve(t *testing.T) {
	cases := []struct {
		name string
		req  Request
		want []string // every shape, in order
	}{
		{"spec and dtypes", Request{Kernels: "relu_bwd", Shapes: "m=2,n=8", DTypes: "f32,bf16"},
			[]string{"relu_bwd m=2,n=8,dtype=f32", "relu_bwd m=2,n=8,dtype=bf16"}},
		{"spec dtype within --dtype", Request{Kernels: "relu_bwd", Shapes: "n=8,dtype=f16", DTypes: "f16"},
			[]string{"relu_bwd n=8,dtype=f16"}},
		{"each spec to the families that take it", Request{Kernels: "all", Shapes: "m=8,n=8;n=2,c=3,l=50,window=3,p=2", DTypes: "f32"},
			[]string{"gelu_bwd m=8,n=8,dtype=f32", "layernorm_bwd m=8,n=8,dtype=f32", "lp_pool1d_bwd n=2,c=3,l=50,window=3,stride=3,p=2,dtype=f32",
				"relu_bwd m=8,n=8,dtype=f32", "rmsnorm_bwd m=8,n=8,dtype=f32", "silu_bwd m=8,n=8,dtype=f32", "softmax_bwd m=8,n=8,dtype=f32", "swiglu_bwd m=8,n=8,dtype=f32"}},
		{"preset with tokens", Request{Kernels: "softmax_bwd", Shapes: "qwen1.5b", Tokens: "64", DTypes: "f32"},
			[]string{"softmax_bwd m=768,n=64,dtype=f32"}},
		{"preset at several token counts", Request{Kernels: "rmsnorm_bwd", Shapes: "qwen1.5b", Tokens: "512,3000", DTypes: "bf16"},
			[]string{"rmsnorm_bwd m=512,n=1536,dtype=bf16", "rmsnorm_bwd m=3000,n=1536,dtype=bf16"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sel, err := Resolve(c.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(sel); strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("shapes\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestResolveAllLeavesOutWithANote: with all, a family that takes nothing
// of the request is left out, and the selection says why.
func TestResolveAllLeavesOutWithANote(t *testing.T) {
	sel, err := Resolve(Request{Kernels: "all", Shapes: "qwen1.5b", DTypes: "f64"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sel.Jobs) != 1 || sel.Jobs[0].Family.Name() != "lp_pool1d_bwd" {
		t.Errorf("jobs %v, want lp_pool1d_bwd alone (the only f64 family)", keys(sel))
	}
	if len(sel.Notes) != len(catalog.All())-1 || !strings.Contains(sel.Notes[0], "supports none of --dtype f64") {
		t.Errorf("notes %q", sel.Notes)
	}
	sel, err = Resolve(Request{Kernels: "all", Shapes: "m=64,n=1024", DTypes: "f16", Params: "vec=8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range sel.Jobs {
		if _, ok := j.Family.Space(j.Shapes[0]).Axis("vec"); !ok {
			t.Errorf("%s kept without a vec axis", j.Family.Name())
		}
	}
}

// TestResolveRejects: each case is an *InputError whose message names what
// was wrong.
func TestResolveRejects(t *testing.T) {
	cases := []struct {
		req  Request
		want string
	}{
		{Request{Kernels: "relu_bwd", Shapes: "qwen1.5b", Tokens: "99999999999"}, "m=99999999999 must be in 1..2147483647"},
		{Request{Kernels: "rmsnorm_bwd", Shapes: "qwen1.5b", Tokens: "3000000000"}, "--shapes qwen1.5b with 3000000000 tokens: rmsnorm_bwd"},
		{Request{Kernels: "relu_bwd", Shapes: "qwen1.5b", Tokens: "0"}, "--tokens \"0\": want positive token counts"},
		{Request{Kernels: "relu_bwd", Shapes: "qwen1.5b", Tokens: "512,x"}, "want positive token counts separated by commas"},
		{Request{Kernels: "relu_bwd", Shapes: "qwen1.5b", Tokens: "512,512"}, "512 is given twice"},
		{Request{Kernels: "relu_bwd", Shapes: "n=8", Tokens: "64"}, "--tokens sets the rows of a preset"},
		{Request{Kernels: "relu_bwd", Shapes: "n=8,dtype=bf16", DTypes: "f32"}, "asks for dtype=bf16 but --dtype is f32"},
		{Request{Kernels: "relu_bwd,relu_bwd", Shapes: "n=8"}, "relu_bwd named twice"},
		{Request{Kernels: "relu_bwd,all", Shapes: "n=8"}, "all stands alone"},
		{Request{Kernels: "relu_bwd,", Shapes: "n=8"}, "empty name"},
		{Request{Kernels: "nope", Shapes: "n=8"}, `unknown kernel "nope"`},
		{Request{Kernels: "all", Shapes: "k=4"}, "no kernel takes k=4"},
		{Request{Kernels: "softmax_bwd", Shapes: "n=2,c=3,l=50,window=3,p=2"}, "softmax_bwd"},
		{Request{Kernels: "relu_bwd", Shapes: "n=8", DTypes: "f64"}, "relu_bwd supports none of --dtype f64"},
		{Request{Kernels: "relu_bwd", Shapes: "n=8", DTypes: "int4"}, `unknown dtype "int4"`},
		{Request{Kernels: "relu_bwd", Shapes: "n=8", Params: "warps=4"}, `relu_bwd has no axis "warps"`},
		{Request{Kernels: "relu_bwd", Shapes: "n=8", DTypes: "f32", Params: "vec=8"}, "vec=8 not accepted for n=8,dtype=f32 (values: 1, 2, 4)"},
		{Request{Kernels: "relu_bwd", Shapes: "n=8", Params: "vec"}, "malformed params"},
		{Request{Kernels: "relu_bwd", Shapes: "llama7b"}, `malformed shape "llama7b"`},
	}
	for _, c := range cases {
		_, err := Resolve(c.req)
		if err == nil || !IsInput(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an input error with %q", c.req, err, c.want)
		}
	}
}

// TestResolvePresetShapesGoThroughShape: preset shapes are the family's
// own Shape of their dims, so they carry the same key a spec would.
func TestResolvePresetShapesGoThroughShape(t *testing.T) {
	sel, err := Resolve(Request{Kernels: "all", Shapes: "qwen1.5b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range sel.Shapes() {
		if fs.S.DType == dtype.Invalid {
			t.Errorf("%s has no dtype", fs)
		}
	}
	if len(sel.Notes) != 0 {
		t.Errorf("notes for the default request: %q", sel.Notes)
	}
}
