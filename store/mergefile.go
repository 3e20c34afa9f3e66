package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gradtune/gradtune/internal/fserr"
)

// ErrMergeOutput is returned (wrapped) by CheckMergeOutput and MergeInto
// for an output path that cannot receive a merge: one of the inputs
// (by path or as the same file), a directory, a file that is not a
// gradtune database, or a database another process is writing.
var ErrMergeOutput = errors.New("cannot receive the merge")

// ErrMergeConflict is returned (wrapped) by MergeInto when the sources
// conflict; it then writes nothing.
var ErrMergeConflict = errors.New("the databases conflict")

// CheckMergeOutput says, reading but writing nothing, whether out may
// receive the merge of the databases at inputs: a new file in an existing
// directory may, and so may an existing gradtune database, which
// MergeInto then merges into (existing is true); see ErrMergeOutput for
// what may not.
func CheckMergeOutput(out string, inputs []string) (existing bool, err error) {
	if out == "" {
		return false, fmt.Errorf("empty output path: %w", ErrMergeOutput)
	}
	if err := notAnInput(out, inputs); err != nil {
		return false, err
	}
	if err := checkFile(out); err != nil {
		return false, fmt.Errorf("%w; it %w", err, ErrMergeOutput)
	}
	fi, err := os.Stat(out)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w: %w", out, ErrMergeOutput, err)
	}
	if fi.Size() == 0 {
		return false, fmt.Errorf("%s %w: it is an empty file, not a gradtune database (merge writes a new file or into a gradtune database)", out, ErrMergeOutput)
	}
	if _, err := os.Stat(out + "-wal"); err == nil {
		return false, fmt.Errorf("%s %w: %s-wal exists, so a process is writing it (or one was killed while writing it); merge into it once no tune writes it",
			out, ErrMergeOutput, out)
	}
	db, err := OpenReadOnly(out)
	if err != nil {
		return false, fmt.Errorf("%w; it %w (merge writes a new file or into a gradtune database)", err, ErrMergeOutput)
	}
	return true, db.Close()
}

// notAnInput refuses an output that names one of the inputs, by path
// (cleaned and made absolute) or as the same file (a link, another
// spelling).
func notAnInput(out string, inputs []string) error {
	absOut, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", out, ErrMergeOutput, err)
	}
	oi, oerr := os.Stat(out)
	for _, in := range inputs {
		absIn, err := filepath.Abs(in)
		if err == nil && absIn == absOut {
			return fmt.Errorf("%s is the input %s: %w; name a new file", out, in, ErrMergeOutput)
		}
		if ii, err := os.Stat(in); err == nil && oerr == nil && os.SameFile(oi, ii) {
			return fmt.Errorf("%s is the input %s (the same file): %w; name a new file", out, in, ErrMergeOutput)
		}
	}
	return nil
}

// MergeInto writes the merge of srcs to the file out: when out is a
// gradtune database it is the first source (merged into), otherwise the
// merge is a new database. The merge is written to a temporary file in
// out's directory, which is renamed over out only when Merge succeeded
// without conflicts, so an interrupted or conflicting merge leaves out as
// it was. On conflicts it returns the report and ErrMergeConflict.
func MergeInto(out string, srcs []*DB) (*MergeReport, error) {
	var paths []string
	for _, s := range srcs {
		paths = append(paths, s.path)
	}
	existing, err := CheckMergeOutput(out, paths)
	if err != nil {
		return nil, err
	}
	if existing {
		prev, err := OpenReadOnly(out)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMergeOutput, err)
		}
		defer prev.Close()
		srcs = append([]*DB{prev}, srcs...)
	}
	tmp, err := newTemp(out)
	if err != nil {
		return nil, err
	}
	defer removeTemp(tmp)
	rep, err := mergeTemp(tmp, out, srcs)
	if err != nil {
		return rep, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, fmt.Errorf("merge into %s: %w", out, fserr.Reason(err))
	}
	syncDir(filepath.Dir(out))
	return rep, nil
}

// mergeTemp merges srcs into the new database tmp, whose messages name
// out, and closes and syncs it; it fails on conflicts.
func mergeTemp(tmp, out string, srcs []*DB) (*MergeReport, error) {
	dst, err := Open(tmp)
	if err != nil {
		return nil, fmt.Errorf("merge into %s: %w", out, err)
	}
	dst.path = out
	rep, err := Merge(dst, srcs...)
	if err == nil && len(rep.Conflicts) > 0 {
		err = fmt.Errorf("%w: %d rows conflict; nothing written to %s", ErrMergeConflict, len(rep.Conflicts), out)
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rep, err
	}
	f, err := os.Open(tmp)
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("merge into %s: %w", out, fserr.Reason(err))
	}
	return rep, nil
}

// newTemp creates the empty temporary file the merge into out is written
// to: ".NAME.*" in out's directory, readable by all as a database is.
func newTemp(out string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return "", fmt.Errorf("merge into %s: %w", out, fserr.Reason(err))
	}
	name := f.Name()
	err = f.Chmod(0o644)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		removeTemp(name)
		return "", fmt.Errorf("merge into %s: %w", out, fserr.Reason(err))
	}
	return name, nil
}

// removeTemp removes a temporary database and its -wal and -shm files;
// after the rename there is none.
func removeTemp(name string) {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		os.Remove(name + suffix)
	}
}

// syncDir makes a rename in dir durable where the file system allows.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
