package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/gradtune/gradtune/store"
)

// shardArgs tune the activations of the recorded H200 database on its
// replay (each variant from its own stream of draws) into db, with extra
// flags.
func shardArgs(db string, extra ...string) []string {
	return append([]string{"--replay", filepath.Join("..", "..", "testdata", "h200-activations.db"),
		"--kernel", "relu_bwd,gelu_bwd,silu_bwd", "--shapes", "qwen1.5b", "--params", "block=128,maxnreg=0",
		"--final-rounds", "0", "--db", db}, extra...)
}

// winners maps "kernel shape" to "params median" over every run of the
// database at path.
func winners(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := store.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range runs {
		ws, err := db.Winners(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			out[w.Kernel+" "+w.ShapeKey] = fmt.Sprintf("%s %.4f", w.Params, w.MedianUS)
		}
	}
	return out
}

// TestShardsGiveTheWholeRunsWinners: the four parts of a run, each in
// its own database, hold every shape once between them, with exactly the
// whole run's winners and medians (a replay draws each variant's samples
// from its own stream, so a part draws what the whole did), and so does
// their merge (tune merge -o ALL PARTS...); a part run
// again re-measures nothing it finished; a part from a Slurm array's
// environment is the part --shard names.
func TestShardsGiveTheWholeRunsWinners(t *testing.T) {
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.db")
	if code, _, errs := runTune(t, shardArgs(whole)...); code != 0 {
		t.Fatalf("whole run: exit %d: %s", code, errs)
	}
	want := winners(t, whole)
	got := map[string]string{}
	for i := 1; i <= 4; i++ {
		part := filepath.Join(dir, fmt.Sprintf("part%d.db", i))
		code, out, errs := runTune(t, shardArgs(part, "--shard", fmt.Sprintf("%d/4", i))...)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("shard %d/4: ", i)) {
			t.Fatalf("part %d: exit %d: %s%s", i, code, out, errs)
		}
		for k, v := range winners(t, part) {
			if _, dup := got[k]; dup {
				t.Errorf("%s is in two parts", k)
			}
			got[k] = v
		}
	}
	if len(want) != 18 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parts' winners\n%v\nwhole run's\n%v", got, want)
	}
	all := filepath.Join(dir, "all.db")
	merge := []string{"merge", "-o", all}
	for i := 1; i <= 4; i++ {
		merge = append(merge, filepath.Join(dir, fmt.Sprintf("part%d.db", i)))
	}
	if code, out, errs := runTune(t, merge...); code != 0 {
		t.Fatalf("merge: exit %d: %s%s", code, out, errs)
	}
	if got := winners(t, all); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("merged parts' winners\n%v\nwhole run's\n%v", got, want)
	}
	code, out, _ := runTune(t, shardArgs(filepath.Join(dir, "part2.db"), "--shard", "2/4")...)
	measured := regexp.MustCompile(`(\d+) valid, \d+ failed, (\d+) reused`)
	for _, m := range measured.FindAllStringSubmatch(out, -1) {
		if m[1] != m[2] {
			t.Errorf("part 2 again: %s valid, %s reused", m[1], m[2])
		}
	}
	if code != 0 || !strings.Contains(out, "reused") {
		t.Errorf("part 2 again: exit %d: %s", code, out)
	}
	t.Setenv("SLURM_ARRAY_TASK_ID", "3")
	t.Setenv("SLURM_ARRAY_TASK_MIN", "1")
	t.Setenv("SLURM_ARRAY_TASK_MAX", "4")
	t.Setenv("SLURM_ARRAY_TASK_COUNT", "4")
	env := filepath.Join(dir, "env.db")
	if code, out, errs := runTune(t, shardArgs(env)...); code != 0 || !strings.Contains(out, "shard 3/4 (from SLURM_ARRAY_TASK_ID): ") {
		t.Fatalf("part from the environment: exit %d: %s%s", code, out, errs)
	}
	if a, b := fmt.Sprint(winners(t, env)), fmt.Sprint(winners(t, filepath.Join(dir, "part3.db"))); a != b {
		t.Errorf("SLURM_ARRAY_TASK_ID=3 of 1..4 tuned %s; --shard 3/4 %s", a, b)
	}
}

// TestKilledShardResumes kills a part of a run by SIGKILL as soon as it
// has finished its first shape, runs the part again into the same
// database, and checks that nothing was lost or measured twice: the
// re-run reuses every evaluation the killed run finished (all of the
// first shape's), and the part's winners are those of the part run
// without a kill. The part tunes whole spaces (216 variants a shape), so
// that the kill lands long before its last shape.
func TestKilledShardResumes(t *testing.T) {
	dir := t.TempDir()
	args := func(db string) []string {
		return []string{"--replay", filepath.Join("..", "..", "testdata", "h200-activations.db"),
			"--kernel", "relu_bwd,gelu_bwd,silu_bwd", "--shapes", "qwen1.5b", "--final-rounds", "0", "--shard", "1/4", "--db", db}
	}
	clean := filepath.Join(dir, "clean.db")
	if code, _, errs := runTune(t, args(clean)...); code != 0 {
		t.Fatalf("part without a kill: exit %d: %s", code, errs)
	}
	part := filepath.Join(dir, "part.db")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"__tune"}, args(part)...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := ""
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if strings.Contains(sc.Text(), " variants: ") {
			f := strings.Fields(sc.Text())
			first = f[0] + " " + f[1]
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if first == "" {
		t.Fatal("the part finished no shape before it ended")
	}
	killed := winners(t, part)
	code, again, errs := runTune(t, args(part)...)
	if code != 0 {
		t.Fatalf("part again: exit %d: %s", code, errs)
	}
	measured := regexp.MustCompile(`(\S+ +\S+) +\d+ variants: (\d+) valid, \d+ failed, (\d+) reused`)
	seen := false
	for _, m := range measured.FindAllStringSubmatch(again, -1) {
		if m[1] = strings.Join(strings.Fields(m[1]), " "); m[1] != first {
			continue
		}
		seen = true
		if m[2] != m[3] {
			t.Errorf("%s, finished before the kill, measured again: %s valid, %s reused", first, m[2], m[3])
		}
	}
	if !seen {
		t.Errorf("the re-run did not tune %s:\n%s", first, again)
	}
	got, want := winners(t, part), winners(t, clean)
	if len(killed) >= len(want) {
		t.Errorf("the killed part had recorded %d winners of %d: the kill came too late to test a resume", len(killed), len(want))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("resumed part's winners\n%v\nthe part's without a kill\n%v", got, want)
	}
}

// TestEmptyShardWritesItsDatabase: a part that holds no shape (six
// shapes over 64 parts leave most empty) still writes its database, with
// no run, so that a merge naming it beside the others gives the whole
// run's winners.
func TestEmptyShardWritesItsDatabase(t *testing.T) {
	dir := t.TempDir()
	args := func(db string, extra ...string) []string {
		return append([]string{"--replay", filepath.Join("..", "..", "testdata", "h200-activations.db"),
			"--kernel", "relu_bwd", "--shapes", "qwen1.5b", "--params", "block=128,maxnreg=0",
			"--final-rounds", "0", "--db", db}, extra...)
	}
	whole := filepath.Join(dir, "whole.db")
	if code, _, errs := runTune(t, args(whole)...); code != 0 {
		t.Fatalf("whole run: exit %d: %s", code, errs)
	}
	empty := ""
	for i := 1; i <= 64 && empty == ""; i++ {
		part := filepath.Join(dir, fmt.Sprintf("part%d.db", i))
		code, out, errs := runTune(t, args(part, "--shard", fmt.Sprintf("%d/64", i))...)
		if code != 0 {
			t.Fatalf("part %d: exit %d: %s%s", i, code, out, errs)
		}
		if strings.Contains(out, ": 0 of ") {
			empty = part
			if !strings.Contains(out, "holds no run") || len(winners(t, part)) != 0 {
				t.Errorf("empty part %d: %s, winners %v", i, out, winners(t, part))
			}
		}
	}
	if empty == "" {
		t.Fatal("no part of 64 is empty: the test needs one")
	}
	all := filepath.Join(dir, "all.db")
	if code, out, errs := runTune(t, "merge", "-o", all, empty, whole); code != 0 {
		t.Fatalf("merge: exit %d: %s%s", code, out, errs)
	}
	if got, want := winners(t, all), winners(t, whole); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("merged winners\n%v\nwhole run's\n%v", got, want)
	}
}
