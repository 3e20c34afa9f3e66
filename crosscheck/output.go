package crosscheck

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gradtune/gradtune/store"
)

// CheckOut says whether path may receive a cross-check's output: a new
// file in an existing directory, an empty file, or an earlier cross-check
// output may; another file only with force; an SQLite database (a results
// database, say) never.
func CheckOut(path string, force bool) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		dir := filepath.Dir(path)
		if di, err := os.Stat(dir); err != nil {
			return fmt.Errorf("--out %s: %w", path, err)
		} else if !di.IsDir() {
			return fmt.Errorf("--out %s: %s is not a directory", path, dir)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("--out %s is a directory, want a file name", path)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("--out %s is not a regular file (mode %s)", path, fi.Mode())
	}
	isDB, err := store.IsSQLite(path)
	if err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	head, err := firstLine(path)
	if err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	switch {
	case isDB:
		return fmt.Errorf("--out %s is an SQLite database: crosscheck never writes over one, even with --force; choose another file", path)
	case len(head) == 0 || isRecord(head) || force:
		return nil
	}
	return fmt.Errorf("--out %s exists and is not a crosscheck output (JSON lines of cases and probes): --force replaces it", path)
}

// firstLine returns the start of path's first line (at most 64 KiB).
func firstLine(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	return line, nil
}

// isRecord reports whether line is a Record of a case or a probe.
func isRecord(line []byte) bool {
	var r Record
	if json.Unmarshal(line, &r) != nil {
		return false
	}
	return (r.Kind == "case" || r.Kind == "probe") && r.Verdict != ""
}

// WriteFile writes the output to path through write, after CheckOut: into
// a temporary file in the same directory, renamed over path once complete,
// so an earlier output survives a failed write.
func WriteFile(path string, force bool, write func(io.Writer) error) (err error) {
	if err := CheckOut(path, force); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return fmt.Errorf("--out %s: cannot create a file in %s: %w", path, filepath.Dir(path), pe.Err) // not the temporary name
	}
	if err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriter(tmp)
	if err := write(w); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
