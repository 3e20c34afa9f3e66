package tuning

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/store"
)

// slowFake compiles by echoing the PTX after a pause, so that helpers are
// busy when the parent dies.
type slowFake struct{}

func (slowFake) ID() string { return "slow-fake" }
func (slowFake) Compile(ptx string) ([]byte, error) {
	time.Sleep(30 * time.Millisecond)
	return []byte(ptx), nil
}

func TestMain(m *testing.M) {
	switch os.Getenv("GRADTUNE_TEST_ROLE") {
	case "helper":
		if err := runner.ServeCompile(os.Stdin, os.Stdout, slowFake{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "parent":
		if err := killParent(os.Getenv("GRADTUNE_TEST_DB")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// killParent tunes relu_bwd f32 [2048×1536] from the recorded H200
// samples with a compile pool of slow fake helpers (this test binary),
// recording into db and saying "recorded N" after each evaluation.
func killParent(path string) error {
	src, err := store.OpenReadOnly("../testdata/h200-activations.db")
	if err != nil {
		return err
	}
	d, err := LoadReplay(src, "activations")
	src.Close()
	if err != nil {
		return err
	}
	db, err := store.Open(path)
	if err != nil {
		return err
	}
	runID, err := db.BeginRun(store.Run{Started: time.Now(), GPUName: "replay"})
	if err != nil {
		return err
	}
	r, err := runner.New(runner.Options{NewWorker: runner.NewReplay(d.Records, 1, 0).Worker(d.Info)})
	if err != nil {
		return err
	}
	exe, _ := os.Executable()
	pool := runner.NewCompilePool([]string{exe, "-test.run=^$"}, 4, nil, func(s string) string { return runner.CacheKey(s, "", "", "", "") })
	r.UseCompilePool(pool)
	var shape ReplayShape
	for _, s := range d.Shapes {
		if s.Family.Name() == "relu_bwd" && s.Shape.Key() == "m=2048,n=1536,dtype=f32" {
			shape = s
		}
	}
	rec := &announcing{Recorder: Recorder{DB: db, Run: runID}, pool: pool}
	_, err = r.Tune(context.Background(), []runner.Job{{Family: shape.Family, Shapes: shape.Shapes()}}, rec)
	return err
}

// announcing records, then says so on stdout with the helpers' pids.
type announcing struct {
	Recorder
	pool *runner.CompilePool
	n    int
}

func (a *announcing) Record(r runner.Result) error {
	if err := a.Recorder.Record(r); err != nil {
		return err
	}
	a.n++
	fmt.Printf("recorded %d pids %v\n", a.n, a.pool.Pids())
	return nil
}

// TestKill9LeavesNoHelperAndLosesNoEvaluation kills a tuning parent with
// busy compile helpers by SIGKILL and checks that its helpers die with it
// (Pdeathsig) and that every evaluation it announced as recorded is in
// the database.
func TestKill9LeavesNoHelperAndLosesNoEvaluation(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "kill.db")
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "GRADTUNE_TEST_ROLE=parent", "GRADTUNE_TEST_DB="+dbPath)
	helperEnv := "GRADTUNE_TEST_ROLE=helper"
	cmd.Env = append(cmd.Env, "GRADTUNE_HELPER_ENV="+helperEnv)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var last string
	recorded := 0
	for sc.Scan() {
		last = sc.Text()
		fmt.Sscanf(last, "recorded %d", &recorded)
		if recorded >= 8 {
			break
		}
	}
	if recorded < 8 {
		cmd.Process.Kill()
		t.Fatalf("the parent stopped after %d evaluations (last line %q)", recorded, last)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	_, pidText, _ := strings.Cut(last, "pids ")
	var pids []int
	for _, f := range strings.Fields(strings.Trim(pidText, "[]")) {
		var p int
		fmt.Sscan(f, &p)
		pids = append(pids, p)
	}
	if len(pids) == 0 {
		t.Fatal("the parent started no helper")
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range pids {
		for alive(p) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(p) {
			t.Errorf("helper %d outlived its parent", p)
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
	db, err := store.OpenReadOnly(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	es, err := db.Evaluations(store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) < recorded {
		t.Errorf("%d evaluations in the database, %d announced before the kill", len(es), recorded)
	}
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// TestCompilePoolCaches compiles three programs in helper processes, then
// again with a fresh pool over the same cache: the second pool compiles
// nothing.
func TestCompilePoolCaches(t *testing.T) {
	t.Setenv("GRADTUNE_HELPER_ENV", "GRADTUNE_TEST_ROLE=helper")
	exe, _ := os.Executable()
	cache := &runner.CubinCache{Dir: t.TempDir()}
	key := func(s string) string { return runner.CacheKey(s, "sm_90", runner.CompileOptions, "slow-fake", "test") }
	ptxs := []string{"// a\n", "// b\n", "// c\n"}
	for round, want := range []struct{ compiled, cached int }{{3, 0}, {0, 3}} {
		pool := runner.NewCompilePool([]string{exe, "-test.run=^$"}, 2, cache, key)
		for _, p := range ptxs {
			pool.Prefetch(p)
		}
		for _, p := range ptxs {
			b, err := pool.Cubin(p)
			if err != nil || string(b) != p {
				t.Fatalf("round %d: cubin of %q: %q, %v", round, p, b, err)
			}
		}
		pool.Close()
		if pool.Compiled != want.compiled || pool.Cached != want.cached {
			t.Errorf("round %d: %d compiled, %d cached; want %d, %d", round, pool.Compiled, pool.Cached, want.compiled, want.cached)
		}
	}
}
