package store

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/eval"
)

// TestSchemaVocabulary compares the values the schema's CHECK constraints
// allow with the Go constants that name them, so that neither side gains a
// value the other lacks.
func TestSchemaVocabulary(t *testing.T) {
	schema, err := migrationFS.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		table, column string
		want          []string
	}{
		{"evaluations", "status", strs(eval.Statuses())},
		{"evaluations", "mode", strs(eval.Modes())},
		{"runs", "status", strs(RunStatuses())},
	} {
		got, err := allowedValues(string(schema), c.table, c.column)
		if err != nil {
			t.Error(err)
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s.%s: the schema allows %q, the Go constants are %q", c.table, c.column, got, c.want)
		}
	}
}

// allowedValues returns the values of the "CHECK (column IN (...))"
// constraint of table.column in schema.
func allowedValues(schema, table, column string) ([]string, error) {
	re := regexp.MustCompile(`(?s)CREATE TABLE ` + table + ` \([^;]*?\b` + column + `\s+TEXT[^,]*?CHECK \(` + column + ` IN \(([^)]*)\)\)`)
	m := re.FindStringSubmatch(schema)
	if m == nil {
		return nil, fmt.Errorf("no CHECK (%s IN (...)) on %s.%s in 0001_init.sql", column, table, column)
	}
	var vals []string
	for _, v := range strings.Split(m[1], ",") {
		vals = append(vals, strings.Trim(strings.TrimSpace(v), "'"))
	}
	return vals, nil
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// TestEveryStatusAndModeStores records an evaluation with each status and
// mode: the schema accepts every value the Go side can produce.
func TestEveryStatusAndModeStores(t *testing.T) {
	db, _ := openTemp(t)
	run := mustBeginRun(t, db)
	for _, m := range eval.Modes() {
		for _, s := range eval.Statuses() {
			k := baseKey
			k.Mode, k.Params = m, string(s)
			e := Evaluation{Key: k, Status: s, Message: "x"}
			if s == eval.OK {
				e = okEval(k, 10)
			}
			id := mustRecord(t, db, run, e)
			got, err := db.Evaluations(Filter{RunID: run})
			if err != nil {
				t.Fatal(err)
			}
			last := got[len(got)-1]
			if last.ID != id || last.Status != s || last.Key.Mode != m {
				t.Errorf("recorded %s/%s, read back %s/%s", s, m, last.Status, last.Key.Mode)
			}
		}
	}
}
