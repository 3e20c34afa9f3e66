// Package eval is the vocabulary that the runner, the store, the reports
// and the commands share about an evaluation of a variant: its Status,
// the timing Mode it was measured in, and the GPU's clock event reasons
// while it ran (NVML's mask: ReasonNames, ThrottleReasons).
//
// Each value is defined here once. The store's schema allows exactly these
// values (the CHECK constraints of store/migrations/0001_init.sql, which a
// store test compares with Statuses and Modes), the runner produces them and
// the commands parse and print them.
//
// The package imports only the standard library, so that every other
// package may import it.
package eval
