package runner

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCubinCacheAtomicAndVerified(t *testing.T) {
	c := CubinCache{Dir: t.TempDir()}
	key := CacheKey(".version 8.0", "sm_90", CompileOptions, "fake", "13000 H200")
	if other := CacheKey(".version 8.0", "sm_90", CompileOptions, "fake", "13010 H200"); other == key {
		t.Error("the driver version is not part of the key")
	}
	if _, ok := c.Get(key); ok {
		t.Fatal("hit in an empty cache")
	}
	if err := c.Put(key, []byte("cubin bytes")); err != nil {
		t.Fatal(err)
	}
	if b, ok := c.Get(key); !ok || string(b) != "cubin bytes" {
		t.Fatalf("got %q, %v", b, ok)
	}
	tmp, _ := filepath.Glob(filepath.Join(c.Dir, "*", ".tmp-*"))
	if len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
	// Flip a byte: the entry no longer matches its checksum.
	p := c.path(key)
	b, _ := os.ReadFile(p)
	b[0] ^= 0xff
	os.WriteFile(p, b, 0o644)
	if _, ok := c.Get(key); ok {
		t.Error("a corrupt entry was trusted")
	}
	os.WriteFile(p, []byte("short"), 0o644)
	if _, ok := c.Get(key); ok {
		t.Error("a truncated entry was trusted")
	}
}

func TestPtxasArch(t *testing.T) {
	p := &PtxasCompiler{CC: "90"}
	if a := p.Arch(".version 8.0\n.target sm_90a\n"); a != "sm_90a" {
		t.Errorf("sm_90a module: -arch %s", a)
	}
	if a := p.Arch(".version 7.0\n.target sm_80\n"); a != "sm_90" {
		t.Errorf("sm_80 module on sm_90: -arch %s", a)
	}
}
