package results

import (
	"testing"
)

// TestExtraBytes: a winner's extra device memory is its program's State
// and Scratch buffers at the shape (the operands are not counted), and -1
// for a point this build cannot emit.
func TestExtraBytes(t *testing.T) {
	for _, c := range []struct {
		kernel, key, params string
		want                int64
	}{
		// the statistics' partials, t·split·16 bytes
		{"cross_entropy_bwd", "t=64,v=1000,dtype=bf16", "block=128,pass=two,split=4,vec=8,vpt=1,reverse=0,copy=ld", 64 * 4 * 16},
		// dh32 [t × r], db32 [out × r] and da32 [r × in], f32
		{"lora_bwd", "t=130,in=200,out=136,r=16,dtype=bf16", "bt=64,warps=4,stages=2,osplit=2,isplit=1", 4 * (130*16 + 136*16 + 16*200)},
		{"lora_bwd", "t=130,in=200,out=136,r=16,dtype=bf16", "bt=64,warps=4,stages=2,osplit=2,isplit=1,nosuchaxis=3", -1},
	} {
		f, s, ok := familyShape(c.kernel, c.key)
		if !ok {
			t.Fatalf("%s %s: not resolved", c.kernel, c.key)
		}
		if got := extraBytes(f, s, c.params); got != c.want {
			t.Errorf("%s %s %s: %d extra bytes, want %d", c.kernel, c.key, c.params, got, c.want)
		}
	}
}
