// Package export builds tuned config tables (configs.Table) from the
// results of a gradtune database and writes them with the winners' PTX.
//
// The database stores each variant's PTX hash, not its text: the exporter
// re-emits every winner through its kernel family (kernels/catalog) from
// the recorded shape key and parameters, checks that the sha256 of the
// emitted PTX is the recorded one, and refuses the export otherwise (the
// generator changed since the run, so the file would not be the code that
// was timed). The launch geometry and buffers come from the same emitted
// program. Without --ptx the check still runs, so a table never names a
// launch geometry that differs from what was measured.
//
// A table holds one GPU model: results from runs on different GPU models
// are refused, naming them, so that the user picks one with --run.
// Entries are sorted and the table's date is its newest run's start, so
// exporting the same database twice gives the same bytes.
//
// Write never replaces an existing file unless asked to (Force), and
// writes each file through a temporary file and a rename, so an
// interrupted export leaves no half-written table.
package export
