// Package export builds tuned config tables (configs.Table) from the
// results of a gradtune database and writes them with the winners' PTX.
//
// The database stores each variant's PTX hash, not its text: the exporter
// re-emits every winner through its kernel family (kernels/catalog) from
// the recorded shape key and parameters, checks that the sha256 of the
// emitted PTX is the recorded one. When it is not (the generator changed
// since the run; the A/B databases under testdata/research/ were timed
// with experimental generators), the entry is kept with a Note saying so
// and without a PTX file, and Write refuses --ptx for it: a PTX file
// beside a table is always the code that was timed. The launch geometry
// and buffers come from the emitted program. A winner that cannot be
// emitted at all (its kernel is gone, or its parameters are no longer a
// point of the family's space) is left out and listed in Table.Skipped.
//
// A table holds one GPU model: results from runs on different GPU models
// are refused, naming them, so that the user picks one with --run.
// Entries are sorted and the table's date is its newest run's start, so
// exporting the same database twice gives the same bytes.
//
// Write never replaces an existing file unless asked to (Force), never
// replaces a database even then (an SQLite file, or Options.Keep: the
// command's --db), and writes each file through a temporary file and a
// rename, so an interrupted export leaves no half-written table (package
// internal/outfile). Options.Check answers, before a database is read,
// whether the options and the table path can work.
package export
