package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/gradtune/gradtune/internal/fserr"
	"github.com/gradtune/gradtune/store"
)

// ErrExists is returned (wrapped) for a target that exists when force is
// not set.
var ErrExists = errors.New("exists (--force replaces it)")

// ErrDatabase is returned (wrapped) for a target that is a database: an
// SQLite file, or a file the caller protects.
var ErrDatabase = errors.New("no output replaces a database, even with --force")

// ErrPath is returned (wrapped) for a target that cannot be a file: a
// directory, something other than a regular file, or a path whose
// directory is missing or not writable.
var ErrPath = errors.New("cannot receive an output file")

// Protected is a file that no output may replace, whatever it holds, and
// what it is to the command ("the --db database").
type Protected struct {
	Path, What string
}

// Check says whether path may receive an output file (see the package
// documentation).
func Check(path string, force bool, keep []Protected) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return checkDir(path)
	case err != nil:
		if derr := checkDir(path); derr != nil {
			return derr
		}
		return fmt.Errorf("%s: %w: %w", path, ErrPath, fserr.Reason(err))
	case fi.IsDir():
		return fmt.Errorf("%s: %w: it is a directory, want a file path", path, ErrPath)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s: %w: not a regular file (mode %s)", path, ErrPath, fi.Mode())
	}
	for _, k := range keep {
		if ki, err := os.Stat(k.Path); err == nil && os.SameFile(fi, ki) {
			return fmt.Errorf("%s is %s: %w", path, k.What, ErrDatabase)
		}
	}
	isDB, err := store.IsSQLite(path)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case isDB:
		return fmt.Errorf("%s is an SQLite database: %w; choose another path", path, ErrDatabase)
	case !force:
		return fmt.Errorf("%s %w", path, ErrExists)
	}
	return nil
}

// checkDir accepts a new file's directory when it exists and this
// process may write into it.
func checkDir(path string) error {
	dir := filepath.Dir(path)
	di, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w: directory %s does not exist", path, ErrPath, dir)
	case err != nil:
		return fmt.Errorf("%s: %w: directory %s: %w", path, ErrPath, dir, fserr.Reason(err))
	case !di.IsDir():
		return fmt.Errorf("%s: %w: %s is not a directory", path, ErrPath, dir)
	}
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return fmt.Errorf("%s: %w: directory %s is not writable: %w", path, ErrPath, dir, err)
	}
	return nil
}

// Write checks every target of files (path to contents), then writes
// each; it returns the paths written, sorted.
func Write(files map[string][]byte, force bool, keep []Protected) ([]string, error) {
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := Check(name, force, keep); err != nil {
			return nil, err
		}
	}
	for _, name := range names {
		if err := writeFile(name, files[name]); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// writeFile writes data to name through a temporary file and a rename.
func writeFile(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, fserr.Reason(err))
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, fserr.Reason(err))
	}
	return nil
}
