// Package evidence has no code: its tests hold the H200 figures that the
// README and docs/ quote to the evidence committed under testdata/ (issue
// 23: every H200 run behind a figure keeps its database, and a test
// recomputes the docs' tables from it).
//
// Each test parses a Markdown table (or a sentence) of a doc and
// recomputes every figure of it from a run's database, read through
// package results as `tune show` reads it (each shape's recorded winner,
// not the fastest variant it tied with, and the baseline recorded with
// it), or, for a peer measured outside the harness, from the file the
// bench script wrote (a peers *.jsonl, a *-ratios.txt, a probe's
// output). A figure passes when the evidence rounds to it at the
// precision the doc prints.
//
//   - docs/kernels/lppool.md, the H200 table: testdata/h200-pool.db, and
//     PyTorch's times from testdata/h200-pool.md (its peers file was not
//     kept).
//   - docs/kernels/nf4.md, the shared-memory B and register-A tables and
//     their geomeans: testdata/nf4/h200-nf4-cluster.db and -rs.db, which
//     their ratios files must also agree with; the probe table:
//     testdata/nf4/h200-rsprobe.txt and h200-rsprobe-real.db.
//   - docs/kernels/gemm.md, the latest run against torch's cuBLAS: its
//     database was not kept, so the table says so and is checked against
//     the run's log and ratios file; the "M at run time" table's winners:
//     testdata/issue21/h200-gemm.db (its registers and sizes are ptxas's).
//   - docs/history/gemm.md, the two earlier runs: their databases and
//     ratios files; testdata/gemm/README.md's geomean per run likewise.
//   - docs/kernels/rows.md: PyTorch's measured times, from
//     testdata/peers-rows.jsonl (the page has no table of figures).
//   - testdata/h200-{activations,rows,pool}.md, the tables the kernel pages
//     cite: their databases and peers files.
//   - README.md: the ranges quoted under the headline, from
//     testdata/issue21/h200-nf4.db and testdata/nf4/h200-nf4-rs.db (the
//     headline's own tables are cmd/tune's TestReadmeHeadline's).
//
// docs/replay.md is regenerated and compared by cmd/tune's
// TestReplayTable. Beside the tables, every testdata path the docs cite
// must exist, and a run whose log or ratios file they cite must keep its
// database beside it, unless a doc marks it "database not kept: figures
// from `<its log>`".
//
// The databases are opened read-only (a copy where a stray write-ahead
// log sits beside one), so the tests write nothing under testdata/.
package evidence
