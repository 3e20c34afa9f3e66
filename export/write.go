package export

import (
	"bytes"
	"fmt"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/internal/outfile"
)

// Formats are the accepted Options.Format values.
var Formats = []string{"json", "go", "c"}

// Options say how Write writes a table.
type Options struct {
	// Format is "json", "go" or "c".
	Format string
	// PTX writes the winners' PTX files beside the table and names them in
	// it; without it the table names none.
	PTX bool
	// Force replaces existing files (never a database: see
	// internal/outfile).
	Force bool
	// Keep are files no output may replace (the command's --db).
	Keep []outfile.Protected
	// Name is the Go variable or the C prefix, Package the Go package;
	// empty derives them from the file name and its directory.
	Name, Package string
}

// cIdent is what a C prefix must look like.
var cIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Check says why opt cannot write a table to path: an unknown format, a
// name or package that is not an identifier or that the format does not
// take, or a table path that cannot receive the file (outfile.Check). It
// reads nothing but the file system, so a command calls it before any
// other work.
func (opt Options) Check(path string) error {
	switch {
	case !slices.Contains(Formats, opt.Format):
		return fmt.Errorf("format %q: want one of %s", opt.Format, strings.Join(Formats, ", "))
	case opt.Package != "" && opt.Format != "go":
		return fmt.Errorf("a package (%q) is for --format go, not %s", opt.Package, opt.Format)
	case opt.Package != "" && !token.IsIdentifier(opt.Package):
		return fmt.Errorf("package %q: want a Go identifier such as tables (letters, digits and _, not a keyword)", opt.Package)
	case opt.Name != "" && opt.Format == "json":
		return fmt.Errorf("a name (%q) is for --format go or c, not json", opt.Name)
	case opt.Name != "" && opt.Format == "go" && !token.IsIdentifier(opt.Name):
		return fmt.Errorf("name %q: want a Go identifier such as Activations (letters, digits and _, not a keyword)", opt.Name)
	case opt.Name != "" && opt.Format == "c" && !cIdent.MatchString(opt.Name):
		return fmt.Errorf("name %q: want a C identifier such as gradtune_activations (letters, digits and _, not a digit first)", opt.Name)
	}
	return outfile.Check(path, opt.Force, opt.Keep)
}

// Write writes t to path in the chosen format, and the PTX files beside
// it with opt.PTX. It checks every target before writing any, and returns
// the files written.
func Write(t *Table, path string, opt Options) ([]string, error) {
	if err := opt.Check(path); err != nil {
		return nil, err
	}
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
	return outfile.Write(files, opt.Force, opt.Keep)
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
