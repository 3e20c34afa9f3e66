// Package reports presents the results of a gradtune database: the
// winners table and the ranked variants of a shape for the terminal
// (`tune show`), and a report directory (`tune report`) with charts drawn
// by gonum.org/v1/plot in SVG and PNG, a self-contained index.html that
// reads offline (the SVG charts are embedded as data: URIs) and a
// report.md for pull requests (which links the PNG files).
//
// The charts are, per shape, every valid variant's median with its 95%
// confidence interval, sorted, with the winner, the default variant and
// any peer (PyTorch) marked; per kernel and tuning axis, box plots of time
// against each value of the axis, relative to the best time of each shape
// so that shapes of different sizes pool; a roofline per GPU (achieved
// TFLOP/s against arithmetic intensity, log-log, with the measured copy
// bandwidth, the data-sheet bandwidth and the FP32 peak); per kernel, the
// best time so far against the number of evaluations, relative to the
// final best; and the failures by kind.
//
// Descriptive statistics use github.com/montanaflynn/stats: per shape the
// quartiles of the valid medians and the variants outside 1.5 IQR (slow
// outliers), and over the winners the least-squares fit of time against
// bytes moved, whose slope is an effective bandwidth and whose intercept
// is the fixed cost of a launch.
//
// Peer rows are the JSON lines the bench scripts (bench/peers*.py) write:
// {"kernel", "shape", "dtype", "peer", "median_us", "gbps"}, plus a
// "copy" row with the peer's copy bandwidth. They appear beside ours in
// the per-shape charts and in a comparison table, which replaces
// bench/compare.py. A peers file without rows is malformed (ErrBadPeers).
//
// Write fills a report directory that is missing or empty, or with Force
// any directory (CheckDir; a file is never one), replacing only the
// report's own files and never a database among them (internal/outfile).
//
// Data assembly (Summarize, the chart builders' inputs) is kept apart
// from rendering, as gonum/plot does; a value that cannot be drawn (NaN,
// infinite, a non-positive time on a log axis) is left out of a chart and
// counted in a warning rather than drawn wrong.
package reports
