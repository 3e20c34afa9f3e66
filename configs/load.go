package configs

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
)

// committed holds the tables under configs/<gpu>/ and their PTX files.
//
//go:embed */*.json */*.ptx
var committed embed.FS

// Load reads every table (*/*.json and *.json) of fsys; an entry's PTX file
// is read from its table's directory.
func Load(fsys fs.FS) (*Set, error) {
	var files []string
	for _, pat := range []string{"*.json", "*/*.json"} {
		m, err := fs.Glob(fsys, pat)
		if err != nil {
			return nil, fmt.Errorf("configs: %w", err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("configs: no tables (*.json) found")
	}
	s := &Set{}
	var dirs []string
	for _, name := range files {
		f, err := fsys.Open(name)
		if err != nil {
			return nil, fmt.Errorf("configs: %w", err)
		}
		t, err := Parse(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		s.Tables = append(s.Tables, t)
		dirs = append(dirs, path.Dir(name))
	}
	s.ptx = func(i int, name string) ([]byte, error) { return fs.ReadFile(fsys, path.Join(dirs[i], name)) }
	return s, nil
}

// LoadFiles reads the tables at paths; an entry's PTX file is read from
// its table's directory. A path given twice is an error.
func LoadFiles(paths ...string) (*Set, error) {
	s := &Set{}
	var dirs []string
	seen := map[string]bool{}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("configs: %w", err)
		}
		if seen[abs] {
			return nil, fmt.Errorf("configs: %s is given twice", p)
		}
		seen[abs] = true
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("configs: %w", err)
		}
		t, err := Parse(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		s.Tables = append(s.Tables, t)
		dirs = append(dirs, filepath.Dir(p))
	}
	if len(s.Tables) == 0 {
		return nil, fmt.Errorf("configs: no tables given")
	}
	s.ptx = func(i int, name string) ([]byte, error) { return os.ReadFile(filepath.Join(dirs[i], name)) }
	return s, nil
}

var embedded = sync.OnceValues(func() (*Set, error) { return Load(committed) })

// Embedded returns the committed tables. They are checked by this
// package's tests, so an error here means a broken build.
func Embedded() (*Set, error) { return embedded() }

// Lookup looks an entry up in the committed tables.
func Lookup(gpu GPU, kernel, dtype string, shape Shape) (Match, error) {
	s, err := Embedded()
	if err != nil {
		return Match{}, err
	}
	return s.Lookup(gpu, kernel, dtype, shape)
}

// checkPTX compares the PTX text with the hash the entry records.
func checkPTX(e Entry, ptx []byte) error {
	sum := sha256.Sum256(ptx)
	if got := hex.EncodeToString(sum[:]); got != e.PTXSHA256 {
		return fmt.Errorf("configs: %s: PTX file %s has sha256 %.12s, the table records %.12s", e.Key(), e.PTX, got, e.PTXSHA256)
	}
	return nil
}
