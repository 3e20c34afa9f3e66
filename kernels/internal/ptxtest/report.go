package ptxtest

import (
	"sort"
	"testing"
)

// ReportSorted sorts problems and reports the first most of them as
// errors, then how many more there are.
func ReportSorted(t *testing.T, problems []string, most int) {
	t.Helper()
	sort.Strings(problems)
	for i, p := range problems {
		if i == most {
			t.Errorf("... and %d more problems", len(problems)-most)
			break
		}
		t.Error(p)
	}
}
