// Package sweep decides how much of the exhaustive test sweeps a test run
// takes. By default (the README's test command) each sweep takes a
// deterministic sample, so that `go test ./...` stays within a few minutes
// on two cores; GRADTUNE_SWEEP=full, which .ci/run sets, takes everything
// (every variant through the analyses, ptxas for sm_90 and sm_80, every
// shape of the space sweeps). GRADTUNE_PTXAS_ALL=1, its older name, means
// the same.
package sweep

import (
	"hash/fnv"
	"os"
)

// Full reports whether the exhaustive sweeps are asked for.
func Full() bool {
	return os.Getenv("GRADTUNE_SWEEP") == "full" || os.Getenv("GRADTUNE_PTXAS_ALL") == "1"
}

// Take reports whether item i of a sweep is in its sample of one in every
// n items (every item when Full, or when n ≤ 1).
func Take(i, n int) bool { return n <= 1 || Full() || i%n == 0 }

// TakeKeyed is Take with the sample shifted by a hash of key, so that the
// sweeps of different shapes (keys) sample different items.
func TakeKeyed(key string, i, n int) bool {
	if n <= 1 {
		return true
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return Take(i+int(h.Sum32()%uint32(n)), n)
}

// Describe says what a sweep of one in every n items takes, for test logs.
func Describe(n int) string {
	if n <= 1 || Full() {
		return "all (GRADTUNE_SWEEP=full)"
	}
	return "a sample of one in " + itoa(n) + " (GRADTUNE_SWEEP=full takes all)"
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
