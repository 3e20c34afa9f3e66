package runner

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// RefCache keeps families' float64 references on disk, so that a later
// process of the same executable reads a reference instead of computing
// it: the nightly bench re-validates the same table entries every night,
// and a GEMM's reference at 8192 tokens takes seconds of the host's cores.
//
// The entries live in a folder named by the executable's SHA-256 (any
// change to the code that makes inputs or references is a new
// executable, so a stale entry is never read), each keyed by the family,
// the shape key (dtype included), the input set (RandomInputs or
// ExactInputs) and
// the seed. A cache directory serves one executable at a time: opening
// it removes the folders of other executables, so that it holds one
// set of references, not one per build. A missing, unreadable or
// malformed entry is computed afresh and written again; a failed write
// leaves the run as it would be without the cache.
//
// A run's own cache (KeepLastShape) holds one shape's references at a
// time: writing a shape's removes every other shape's, so that a tune
// over large shapes does not fill the disk with references it will not
// read again.
type RefCache struct {
	dir string // the executable's folder
	// lastShape: writing a shape's reference removes other shapes'.
	lastShape bool
}

// OpenRefCache opens (creating it) the reference cache in dir for the
// running executable.
func OpenRefCache(dir string) (*RefCache, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("reference cache: finding the executable: %w", err)
	}
	sum, err := fileSHA256(exe)
	if err != nil {
		return nil, fmt.Errorf("reference cache: %w", err)
	}
	own := filepath.Join(dir, sum)
	if err := os.MkdirAll(own, 0o755); err != nil {
		return nil, fmt.Errorf("reference cache: %w", err)
	}
	others, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reference cache: %w", err)
	}
	for _, e := range others {
		if e.IsDir() && e.Name() != sum && isSHA256Hex(e.Name()) {
			os.RemoveAll(filepath.Join(dir, e.Name())) // what is left is only disk used
		}
	}
	return &RefCache{dir: own}, nil
}

// Dir is the executable's folder of an open cache: what a worker process
// of the same executable is given (RefCacheIn), so that the executable is
// hashed and the directory pruned once, by the process that opens it.
func (c *RefCache) Dir() string { return c.dir }

// RefCacheIn is the cache whose executable's folder is dir (an open
// cache's Dir), for a process of that same executable.
func RefCacheIn(dir string) *RefCache {
	_, err := os.Stat(filepath.Join(dir, lastShapeMarker))
	return &RefCache{dir: dir, lastShape: err == nil}
}

// lastShapeMarker, a file in the executable's folder, says that the cache
// keeps one shape's references (KeepLastShape).
const lastShapeMarker = "last-shape-only"

// KeepLastShape makes the cache, in this process and in the processes
// given its Dir, keep only the references of the shape written last.
func (c *RefCache) KeepLastShape() error {
	if err := os.WriteFile(filepath.Join(c.dir, lastShapeMarker), nil, 0o644); err != nil {
		return fmt.Errorf("reference cache: %w", err)
	}
	c.lastShape = true
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func isSHA256Hex(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size
}

// reference is f's reference on in (the input set named set, from seed):
// read from the cache, else computed and stored.
func (c *RefCache) reference(f kernels.Family, s variants.Shape, set string, seed uint64, in map[string][]float64) map[string][]float64 {
	if c == nil {
		return f.Reference(s, in)
	}
	shape := shapeName(f.Name(), s.Key(), seed)
	path := filepath.Join(c.dir, shape+"-"+set+".ref")
	if ref, err := readRef(path); err == nil {
		return ref
	}
	ref := f.Reference(s, in)
	if c.lastShape {
		c.removeOtherShapes(shape)
	}
	_ = writeRef(path, ref) // a reference not kept is computed again next time
	return ref
}

// shapeName names a shape's entries: the SHA-256 of the family, the shape
// key (dtype included) and the seed; each input set's file adds its name.
func shapeName(kernel, shape string, seed uint64) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d", kernel, shape, seed)
	return hex.EncodeToString(h.Sum(nil))
}

// removeOtherShapes removes the entries of every shape but shape; what
// cannot be removed only uses disk.
func (c *RefCache) removeOtherShapes(shape string) {
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".ref") && !strings.HasPrefix(name, shape+"-") {
			os.Remove(filepath.Join(c.dir, name))
		}
	}
}

// refMagic opens every cache file: the format and its version.
const refMagic = "gradtune reference 1\n"

var errBadRef = errors.New("malformed reference file")

// writeRef stores ref at path: refMagic, the buffer count, then per
// buffer (in name order) its name's length and name, its element count
// and its float64 elements, little-endian; through a temporary file and a
// rename, so that a reader never sees half a file.
func writeRef(path string, ref map[string][]float64) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ref-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	names := make([]string, 0, len(ref))
	for name := range ref {
		names = append(names, name)
	}
	slices.Sort(names)
	w.WriteString(refMagic)
	binary.Write(w, binary.LittleEndian, uint32(len(names)))
	for _, name := range names {
		binary.Write(w, binary.LittleEndian, uint32(len(name)))
		w.WriteString(name)
		binary.Write(w, binary.LittleEndian, uint64(len(ref[name])))
		writeFloats(w, ref[name])
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// readRef reads a file writeRef wrote; anything else is an error.
func readRef(path string) (map[string][]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	left := st.Size()
	r := bufio.NewReaderSize(f, 1<<20)
	magic := make([]byte, len(refMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != refMagic {
		return nil, errBadRef
	}
	left -= int64(len(refMagic))
	var n uint32
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return nil, errBadRef
	}
	left -= 4
	ref := map[string][]float64{}
	for range n {
		var nameLen uint32
		if err := binary.Read(r, binary.LittleEndian, &nameLen); err != nil || int64(nameLen) > left {
			return nil, errBadRef
		}
		name := make([]byte, nameLen)
		var count uint64
		if _, err := io.ReadFull(r, name); err != nil {
			return nil, errBadRef
		}
		if err := binary.Read(r, binary.LittleEndian, &count); err != nil {
			return nil, errBadRef
		}
		left -= 4 + int64(nameLen) + 8
		if count > uint64(left)/8 {
			return nil, errBadRef
		}
		vals := make([]float64, count)
		if err := readFloats(r, vals); err != nil {
			return nil, errBadRef
		}
		left -= 8 * int64(count)
		ref[string(name)] = vals
	}
	if left != 0 {
		return nil, errBadRef
	}
	return ref, nil
}

// floatChunk is how many elements writeFloats and readFloats convert at
// a time (a reference holds up to hundreds of megabytes).
const floatChunk = 1 << 14

func writeFloats(w *bufio.Writer, vals []float64) {
	buf := make([]byte, 0, 8*floatChunk)
	for len(vals) > 0 {
		n := min(len(vals), floatChunk)
		buf = buf[:0]
		for _, v := range vals[:n] {
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		}
		w.Write(buf)
		vals = vals[n:]
	}
}

func readFloats(r io.Reader, vals []float64) error {
	buf := make([]byte, 8*floatChunk)
	for len(vals) > 0 {
		n := min(len(vals), floatChunk)
		if _, err := io.ReadFull(r, buf[:8*n]); err != nil {
			return err
		}
		for i := range n {
			vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:]))
		}
		vals = vals[n:]
	}
	return nil
}
