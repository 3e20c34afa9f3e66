// Package reports will turn stored results into plots (gonum/plot), HTML
// and Markdown reports, and regression comparisons between runs.
//
// Nothing is implemented yet: until it is, bench/compare.py joins a results
// database with peer measurements into a Markdown table.
package reports
