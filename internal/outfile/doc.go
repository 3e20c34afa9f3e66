// Package outfile writes the output files of gradtune's commands (export's
// tables and PTX files, report's pages and charts) under one rule: an
// output never takes the place of a database.
//
// Check says whether a path may receive an output: a new file in an
// existing, writable directory may; an existing regular file only with
// force; an SQLite database (store.IsSQLite: its header bytes) never, even
// with force, and neither may a file the caller protects (the command's
// own --db), under any name that reaches it. Write checks every target of
// a set before it writes any, and writes each through a temporary file in
// the same directory renamed over the target, so an interrupted write
// leaves the earlier file or none. Errors name the output path, never the
// temporary file, and wrap ErrExists, ErrDatabase or ErrPath, which a
// command reports as usage errors.
package outfile
