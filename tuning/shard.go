package tuning

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/variants"
)

// Shard is part Index (1-based) of a partition of a run's work items into
// Count parts. A work item is one (family, dtype, shape): it belongs to
// the part its key's FNV-1a hash modulo Count picks, so the partition
// depends on nothing but the item itself, every item is in exactly one
// part, and items added to a request never move the others.
type Shard struct{ Index, Count int }

// All is the partition of one part: every item.
var All = Shard{1, 1}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ParseShard reads "i/n", 1 ≤ i ≤ n.
func ParseShard(v string) (Shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(v), "/")
	i, ierr := strconv.Atoi(is)
	n, nerr := strconv.Atoi(ns)
	if !ok || ierr != nil || nerr != nil {
		return Shard{}, fmt.Errorf("%q: want i/n, e.g. 2/4 (part i of n, counted from 1)", v)
	}
	if n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("%q: want 1 ≤ i ≤ n", v)
	}
	return Shard{i, n}, nil
}

// ShardFromEnv reads the part from a scheduler's environment: a Slurm job
// array (SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT, or with
// SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_MAX, the ids counted from
// MIN), else a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, from 0, with
// JOB_COMPLETIONS, which the manifest sets to the Job's completions). It
// returns All and no source when neither is set, and an error naming
// the variables when they are set but inconsistent.
func ShardFromEnv(getenv func(string) string) (Shard, string, error) {
	if id := getenv("SLURM_ARRAY_TASK_ID"); id != "" {
		return slurmShard(getenv, id)
	}
	if idx := getenv("JOB_COMPLETION_INDEX"); idx != "" {
		i, err := strconv.Atoi(idx)
		n, nerr := strconv.Atoi(getenv("JOB_COMPLETIONS"))
		if err != nil || nerr != nil || i < 0 || n < 1 || i >= n {
			return Shard{}, "", fmt.Errorf("JOB_COMPLETION_INDEX=%q with JOB_COMPLETIONS=%q: want 0 ≤ index < completions (set JOB_COMPLETIONS to the Job's completions)", idx, getenv("JOB_COMPLETIONS"))
		}
		return Shard{i + 1, n}, "JOB_COMPLETION_INDEX", nil
	}
	return All, "", nil
}

// slurmShard is the part of array task id: ids MIN..MAX (MIN 0 when
// unset) are parts 1..n, n = MAX−MIN+1, or SLURM_ARRAY_TASK_COUNT without
// MAX. A stepped or listed array (--array=0-9:2, --array=1,3) has a count
// that is not MAX−MIN+1 and is refused: pass --shard there.
func slurmShard(getenv func(string) string, id string) (Shard, string, error) {
	count, lo, hi := getenv("SLURM_ARRAY_TASK_COUNT"), getenv("SLURM_ARRAY_TASK_MIN"), getenv("SLURM_ARRAY_TASK_MAX")
	bad := fmt.Errorf("SLURM_ARRAY_TASK_ID=%q with SLURM_ARRAY_TASK_COUNT=%q, MIN=%q, MAX=%q: want ids MIN..MAX in steps of one, or pass --shard i/n",
		id, count, lo, hi)
	num := func(v string, def int) (int, bool) {
		if v == "" {
			return def, true
		}
		n, err := strconv.Atoi(v)
		return n, err == nil
	}
	t, okT := num(id, 0)
	first, okLo := num(lo, 0)
	n, okN := num(count, 0)
	if hi != "" {
		last, ok := num(hi, 0)
		c := last - first + 1
		if !ok || (count != "" && c != n) {
			return Shard{}, "", bad
		}
		n = c
	}
	if !okT || !okLo || !okN || n < 1 || t < first || t-first >= n {
		return Shard{}, "", bad
	}
	return Shard{t - first + 1, n}, "SLURM_ARRAY_TASK_ID", nil
}

// Owns reports whether the part holds family's shape s.
func (s Shard) Owns(family string, sh variants.Shape) bool {
	if s.Count <= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(family + " " + sh.Key()))
	return int(h.Sum64()%uint64(s.Count)) == s.Index-1
}

// Select is sel with only the part's shapes; a job left with none is
// dropped.
func (s Shard) Select(sel Selection) Selection {
	out := sel
	out.Jobs = nil
	for _, j := range sel.Jobs {
		var keep []variants.Shape
		for _, sh := range j.Shapes {
			if s.Owns(j.Family.Name(), sh) {
				keep = append(keep, sh)
			}
		}
		if len(keep) > 0 {
			out.Jobs = append(out.Jobs, runner.Job{Family: j.Family, Shapes: keep})
		}
	}
	return out
}
