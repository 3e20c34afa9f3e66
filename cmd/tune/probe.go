package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gradtune/gradtune/internal/outfile"
)

// probeWrite refuses, before any work, an output that its directory will
// not take: it creates a file in dir under pattern (os.CreateTemp's, the
// name the command's own temporary file will have) and removes it at
// once. That finds what an access check alone misses (a file system that
// refuses every new file whoever asks, root included; a name too long
// once the temporary file's suffix is added). The usage error names the
// flag and the output, never the temporary file.
func probeWrite(flag, out, dir, pattern string) error {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if errors.Is(err, syscall.ENAMETOOLONG) {
			return usagef("%s %s: cannot create a file in %s: %w (with the suffix of the temporary file the output is written through; choose a shorter name)",
				flag, out, dir, err)
		}
		return usagef("%s %s: cannot create a file in %s: %w", flag, out, dir, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("%s %s: removing the probe of its directory: %w", flag, out, err)
	}
	return nil
}

// probeFile is probeWrite for an output file written through a
// temporary file named pattern (base is the output's file name) in the
// output's own directory.
func probeFile(flag, out string, pattern func(base string) string) error {
	return probeWrite(flag, out, filepath.Dir(out), pattern(filepath.Base(out)))
}

// checkNewFile says, in internal/outfile's words (the ones export and
// report use), why a file out that does not exist yet cannot be created:
// its directory is missing, not a directory or not writable. An out that
// exists is left to the command's own checks.
func checkNewFile(flag, out string) error {
	if _, err := os.Stat(out); err == nil {
		return nil
	}
	if err := outfile.Check(out, false, nil); err != nil {
		return usagef("%s %w", flag, err)
	}
	return nil
}

// dotTemp is the name internal/outfile gives an output's temporary file,
// ".NAME.*"; tune and bench probe their --db's directory with it too.
func dotTemp(base string) string { return "." + base + ".*" }

// crosscheckTemp is the name crosscheck.WriteFile gives its temporary
// file, "NAME.tmp*".
func crosscheckTemp(base string) string { return base + ".tmp*" }
