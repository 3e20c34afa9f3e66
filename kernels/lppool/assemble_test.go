package lppool

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
)

var lpEntryRE = regexp.MustCompile(`lp_pool1d_bwd_(f32|f16|bf16|f64)`)

// asmJob is one ptxas run: variants (indices into the variant list) that
// share a module header, for one architecture.
type asmJob struct {
	arch    string
	header  string
	members []int
}

// TestAssemble assembles every variant of the benchmark shape and
// the odd shapes, in every dtype, with ptxas for sm_90, and reads ptxas'
// report: no spills or stack without a register cap, the cap respected
// with one, no shared memory. As TestAssembleAllVariants does, it
// assembles a deterministic sample: a quarter for sm_90 and a sixteenth
// for sm_80, or all of them for both with GRADTUNE_SWEEP=full (about 3.5
// minutes of two cores; internal/sweep). Kernels are renamed and batched
// into modules of 40.
func TestAssemble(t *testing.T) {
	path := ptxas.RequireOrSkip(t)
	start := time.Now()
	all := lpAllVariants(t)
	var (
		mu       sync.Mutex
		problems []string
		counts   = map[string]int{}
	)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	ptxtest.Parallel(asmJobs(all), func(j asmJob) {
		ps, err := assembleJob(ctx, path, all, j)
		mu.Lock()
		problems = append(problems, ps...)
		if err == nil {
			counts[j.arch] += len(j.members)
		}
		mu.Unlock()
	})
	ptxtest.ReportSorted(t, problems, 20)
	if want := len(all); sweep.Full() && len(problems) == 0 && counts["sm_90"] != want {
		t.Errorf("assembled %d variants for sm_90, want all %d", counts["sm_90"], want)
	}
	if testing.Verbose() {
		t.Logf("%d variants; assembled %d for sm_90 and %d for sm_80 in %v", len(all), counts["sm_90"], counts["sm_80"], time.Since(start).Round(time.Millisecond))
	}
}

// asmJobs groups the sampled variants by module header into batches of
// 40, for sm_90 and sm_80.
func asmJobs(all []lpVariant) []asmJob {
	headers := map[string][]int{}
	var order []string
	for i, v := range all {
		h := v.prog.PTX[:strings.Index(v.prog.PTX, ".visible .entry ")]
		if headers[h] == nil {
			order = append(order, h)
		}
		headers[h] = append(headers[h], i)
	}
	const batch = 40
	var jobs []asmJob
	for _, arch := range []string{"sm_90", "sm_80"} {
		for _, h := range order {
			var ms []int
			for _, i := range headers[h] {
				if sweep.Take(i+3, map[string]int{"sm_90": 4, "sm_80": 16}[arch]) {
					ms = append(ms, i)
				}
			}
			for len(ms) > 0 {
				n := min(batch, len(ms))
				jobs = append(jobs, asmJob{arch, h, ms[:n]})
				ms = ms[n:]
			}
		}
	}
	return jobs
}

// asmModule joins a job's kernels into one module, each renamed with its
// position, and maps the new entry names to the variants.
func asmModule(all []lpVariant, j asmJob) (string, map[string]int) {
	var b strings.Builder
	b.WriteString(j.header)
	names := map[string]int{}
	for n, i := range j.members {
		prefix := fmt.Sprintf("v%03d", n)
		body := all[i].prog.PTX[len(j.header):]
		b.WriteString(lpEntryRE.ReplaceAllString(body, prefix))
		b.WriteString("\n")
		for _, l := range all[i].prog.Launches {
			names[lpEntryRE.ReplaceAllString(l.Entry, prefix)] = i
		}
	}
	return b.String(), names
}

// assembleJob assembles a job's module and returns the problems ptxas
// reports; when the module fails, each variant is assembled alone to name
// the ones that fail.
func assembleJob(ctx context.Context, path string, all []lpVariant, j asmJob) ([]string, error) {
	text, names := asmModule(all, j)
	reports, _, err := ptxas.Assemble(ctx, path, text, j.arch)
	var ps []string
	if err != nil {
		for _, i := range j.members {
			one, _ := asmModule(all, asmJob{j.arch, j.header, []int{i}})
			if _, _, err := ptxas.Assemble(ctx, path, one, j.arch); err != nil {
				ps = append(ps, fmt.Sprintf("%s: %s %s: %v", j.arch, all[i].shape.Key(), all[i].key, err))
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range reports {
		i, ok := names[r.Function]
		if !ok {
			ps = append(ps, fmt.Sprintf("%s: report for unknown kernel %s", j.arch, r.Function))
			continue
		}
		seen[r.Function] = true
		if p := reportProblem(all[i], r); p != "" {
			ps = append(ps, j.arch+": "+p)
		}
	}
	if err == nil && len(seen) != len(names) {
		ps = append(ps, fmt.Sprintf("%s: %d reports for %d kernels", j.arch, len(seen), len(names)))
	}
	return ps, err
}

// reportProblem says what is wrong with ptxas' report of a kernel of v:
// spills or stack without a register cap, registers above the cap, or
// shared memory. It returns "" for a good report.
func reportProblem(v lpVariant, r ptxas.Report) string {
	switch cap := v.params.MaxNReg; {
	case cap == 0 && r.Spills():
		return fmt.Sprintf("%s %s %s: spills without a register cap: %d/%d bytes, %d stack, %d registers",
			v.shape.Key(), v.key, r.Function, r.SpillStores, r.SpillLoads, r.StackBytes, r.Registers)
	case cap > 0 && r.Registers > cap:
		return fmt.Sprintf("%s %s %s: %d registers above .maxnreg %d", v.shape.Key(), v.key, r.Function, r.Registers, cap)
	case r.SharedBytes != 0:
		return fmt.Sprintf("%s %s: %d bytes shared memory", v.shape.Key(), v.key, r.SharedBytes)
	}
	return ""
}
