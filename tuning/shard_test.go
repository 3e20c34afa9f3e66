package tuning

import (
	"fmt"
	"strings"
	"testing"
)

// TestShardFromEnv: Slurm arrays by count or by range (ids from MIN),
// Kubernetes Indexed Jobs, nothing set, and inconsistent settings refused
// with the variables named.
func TestShardFromEnv(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string // part, source; or the error's start
	}{
		{map[string]string{}, "1/1 "},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "4"}, "1/4 SLURM_ARRAY_TASK_ID"},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_MIN": "5", "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_COUNT": "4"}, "3/4 SLURM_ARRAY_TASK_ID"},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4"}, "4/4 SLURM_ARRAY_TASK_ID"},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_COUNT": "5"}, "error: SLURM_ARRAY_TASK_ID=\"2\""},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4"}, "error: SLURM_ARRAY_TASK_ID=\"4\""},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "4"}, "error: SLURM_ARRAY_TASK_ID=\"x\""},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "1"}, "error: SLURM_ARRAY_TASK_ID=\"1\""},
		{map[string]string{"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "3"}, "1/3 JOB_COMPLETION_INDEX"},
		{map[string]string{"JOB_COMPLETION_INDEX": "2", "JOB_COMPLETIONS": "3"}, "3/3 JOB_COMPLETION_INDEX"},
		{map[string]string{"JOB_COMPLETION_INDEX": "3", "JOB_COMPLETIONS": "3"}, "error: JOB_COMPLETION_INDEX=\"3\""},
		{map[string]string{"JOB_COMPLETION_INDEX": "0"}, "error: JOB_COMPLETION_INDEX=\"0\" with JOB_COMPLETIONS=\"\""},
	}
	for _, c := range cases {
		s, src, err := ShardFromEnv(func(k string) string { return c.env[k] })
		got := s.String() + " " + src
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%v: got %q, want %q…", c.env, got, c.want)
		}
	}
}

// TestParseShard: i/n with 1 ≤ i ≤ n, nothing else.
func TestParseShard(t *testing.T) {
	for in, want := range map[string]string{"2/4": "2/4", " 1/1": "1/1", "0/4": "error", "5/4": "error", "2": "error", "a/b": "error", "1/0": "error"} {
		s, err := ParseShard(in)
		got := s.String()
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("ParseShard(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
}

// TestShardPartition: the parts of the qwen1.5b selection of every
// family hold every shape exactly once, each part some, and a part's
// shapes do not change when the request grows (more token counts).
func TestShardPartition(t *testing.T) {
	small, err := Resolve(Request{Kernels: "all", Shapes: "qwen1.5b", Tokens: "2048"})
	if err != nil {
		t.Fatal(err)
	}
	big, err := Resolve(Request{Kernels: "all", Shapes: "qwen1.5b", Tokens: "512,2048,8192"})
	if err != nil {
		t.Fatal(err)
	}
	keys := func(sel Selection) []string {
		var out []string
		for _, fs := range sel.Shapes() {
			out = append(out, fs.F.Name()+" "+fs.S.Key())
		}
		return out
	}
	const n = 4
	seen := map[string]int{}
	for i := 1; i <= n; i++ {
		part := keys(Shard{i, n}.Select(small))
		if len(part) == 0 {
			t.Errorf("part %d/%d of %d shapes is empty", i, n, len(keys(small)))
		}
		for _, k := range part {
			seen[k]++
		}
		grown := strings.Join(keys(Shard{i, n}.Select(big)), "\n") + "\n"
		for _, k := range part {
			if !strings.Contains(grown, k+"\n") {
				t.Errorf("part %d/%d: %s moved when the request grew", i, n, k)
			}
		}
	}
	for _, k := range keys(small) {
		if seen[k] != 1 {
			t.Errorf("%s is in %d parts", k, seen[k])
		}
	}
	if got := fmt.Sprint(len(keys(All.Select(small)))); got != fmt.Sprint(len(keys(small))) {
		t.Errorf("1/1 keeps %s of %d shapes", got, len(keys(small)))
	}
}
