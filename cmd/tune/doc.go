// Package main is the tune command: it generates, validates, measures and
// ranks PTX variants of gradtune's backward kernels on an NVIDIA GPU.
//
// Usage:
//
//	tune [--kernel K[,K...]|all] [--shapes PRESET|SPEC] [--tokens N] [--dtype D[,D]]
//	     [--params P] [--budget N] [--db tune.db] [--device 0] [--mode cold|hot] [--fresh]
//	tune list
//	tune emit --kernel K --shapes SPEC --params P [--dtype D]
//	tune check --kernel K --shapes SPEC [--sample N] [--params P]
//	tune crosscheck --out FILE [--kernel K|all] [--cases N]
//	tune devices
//	tune show [--db F] [--run ID] [--kernel K] [--shapes S] [--variants]
//	tune report [--db F] [--run ID] [--peers FILE.jsonl] [--force] -o DIR
//	tune export [--db F] [--run ID] --format json|go|c [--ptx] [--force] -o PATH
//
// show, report and export read a database without writing to it; their
// logic lives in internal/results, reports and configs/export, and their
// flags in show.go, report.go and export.go (dispatched from main through
// results.go, before the tuning commands).
//
// Exit codes: 0 success, 1 failure (no GPU, a GPU error, no valid variant,
// a wrong variant in check), 2 usage error. The worker mode (`tune
// __worker`) is internal: the tuning loop re-executes the binary in it so
// that a crashing kernel takes down only the worker.
package main
