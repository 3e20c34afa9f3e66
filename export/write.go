package export

import (
	"bytes"
	"errors"
	"fmt"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/gradtune/gradtune/configs"
)

// ErrExists is returned (wrapped) by Write for an output file that exists
// when Options.Force is not set.
var ErrExists = errors.New("output file exists (use --force to replace it)")

// Formats are the accepted Options.Format values.
var Formats = []string{"json", "go", "c"}

// Options say how Write writes a table.
type Options struct {
	// Format is "json", "go" or "c".
	Format string
	// PTX writes the winners' PTX files beside the table and names them in
	// it; without it the table names none.
	PTX bool
	// Force replaces existing files.
	Force bool
	// Name is the Go variable or the C prefix, Package the Go package;
	// empty derives them from the file name and its directory.
	Name, Package string
}

// Write writes t to path in the chosen format, and the PTX files beside
// it with opt.PTX. It checks every target before writing any, and returns
// the files written.
func Write(t *Table, path string, opt Options) ([]string, error) {
	if opt.PTX {
		for _, e := range t.Entries {
			if e.Note != "" {
				return nil, fmt.Errorf("%s [%s]: %w (%s); export without --ptx, or re-tune", e.Key(), e.Params, ErrPTXChanged, e.Note)
			}
		}
	}
	out := t.Table
	if !opt.PTX {
		c := *t.Table
		c.Entries = append([]configs.Entry(nil), t.Entries...)
		for i := range c.Entries {
			c.Entries[i].PTX = ""
		}
		out = &c
	}
	var b bytes.Buffer
	var err error
	switch opt.Format {
	case "json":
		err = configs.WriteJSON(&b, out)
	case "go":
		err = configs.WriteGo(&b, out, goPackage(opt.Package, path), identifier(opt.Name, path, true))
	case "c":
		err = configs.WriteC(&b, out, identifier(opt.Name, path, false))
	default:
		return nil, fmt.Errorf("format %q: want one of %s", opt.Format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{path: b.Bytes()}
	if opt.PTX {
		for name, text := range t.PTX {
			files[filepath.Join(filepath.Dir(path), name)] = []byte(text)
		}
	}
	return writeAll(files, opt.Force)
}

// writeAll checks every target, then writes each through a temporary
// file and a rename.
func writeAll(files map[string][]byte, force bool) ([]string, error) {
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fi, err := os.Stat(name)
		switch {
		case err == nil && fi.IsDir():
			return nil, fmt.Errorf("%s: is a directory, want a file path", name)
		case err == nil && !force:
			return nil, fmt.Errorf("%s: %w", name, ErrExists)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
		if di, err := os.Stat(filepath.Dir(name)); err != nil || !di.IsDir() {
			return nil, fmt.Errorf("%s: directory %s does not exist", name, filepath.Dir(name))
		}
	}
	for _, name := range names {
		if err := writeFile(name, files[name]); err != nil {
			return nil, err
		}
	}
	return names, nil
}

func writeFile(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// identifier is name, or one made from the file name: "Activations" for
// Go, "gradtune_activations" for C.
func identifier(name, path string, exported bool) string {
	if name != "" {
		return name
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	base = strings.Trim(nonIdent.ReplaceAllString(base, "_"), "_")
	if base == "" {
		base = "table"
	}
	if exported {
		var b strings.Builder
		for _, part := range strings.Split(base, "_") {
			if part != "" {
				b.WriteString(strings.ToUpper(part[:1]) + part[1:])
			}
		}
		s := b.String()
		if s[0] >= '0' && s[0] <= '9' {
			s = "T" + s
		}
		return s
	}
	return "gradtune_" + strings.ToLower(base)
}

// goPackage is the name of the directory the Go file goes into.
func goPackage(pkg, path string) string {
	if pkg != "" {
		return pkg
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "configs"
	}
	p := strings.ToLower(strings.Trim(nonIdent.ReplaceAllString(filepath.Base(filepath.Dir(abs)), "_"), "_"))
	if !token.IsIdentifier(p) {
		return "tables" // empty, a digit first, or a keyword ("go")
	}
	return p
}
