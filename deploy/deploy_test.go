package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	tuneJobFile  = "kubernetes/tune-indexed-job.yaml"
	mergeJobFile = "kubernetes/merge-job.yaml"
	arrayScript  = "slurm/tune-array.sbatch"
	mergeScript  = "slurm/merge.sbatch"
	image        = "ghcr.io/your-org/gradtune:latest"
)

// The subset of the Kubernetes API the manifests use. They are decoded
// strictly: a field these types lack fails the test, which catches a
// misspelt field (completionmode) that the API server would reject or,
// worse, drop. A real field added to a manifest goes here too.

type meta struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type object struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   meta            `json:"metadata"`
	Spec       json.RawMessage `json:"spec"`
	doc        []byte          // the YAML document
}

type pvcSpec struct {
	AccessModes      []string `json:"accessModes"`
	StorageClassName *string  `json:"storageClassName,omitempty"`
	Resources        struct {
		Requests map[string]any `json:"requests"`
	} `json:"resources"`
}

type jobSpec struct {
	CompletionMode       string `json:"completionMode,omitempty"`
	Completions          *int   `json:"completions,omitempty"`
	Parallelism          *int   `json:"parallelism,omitempty"`
	BackoffLimit         *int   `json:"backoffLimit,omitempty"`
	BackoffLimitPerIndex *int   `json:"backoffLimitPerIndex,omitempty"`
	MaxFailedIndexes     *int   `json:"maxFailedIndexes,omitempty"`
	PodFailurePolicy     *struct {
		Rules []struct {
			Action      string `json:"action"`
			OnExitCodes *struct {
				ContainerName string `json:"containerName,omitempty"`
				Operator      string `json:"operator"`
				Values        []int  `json:"values"`
			} `json:"onExitCodes,omitempty"`
			OnPodConditions []struct {
				Type   string `json:"type"`
				Status string `json:"status,omitempty"`
			} `json:"onPodConditions,omitempty"`
		} `json:"rules"`
	} `json:"podFailurePolicy,omitempty"`
	Template struct {
		Metadata meta    `json:"metadata"`
		Spec     podSpec `json:"spec"`
	} `json:"template"`
}

type podSpec struct {
	RestartPolicy    string           `json:"restartPolicy"`
	RuntimeClassName *string          `json:"runtimeClassName,omitempty"`
	NodeSelector     map[string]any   `json:"nodeSelector,omitempty"`
	Tolerations      []map[string]any `json:"tolerations,omitempty"`
	InitContainers   []container      `json:"initContainers,omitempty"`
	Containers       []container      `json:"containers"`
	Volumes          []struct {
		Name                  string `json:"name"`
		PersistentVolumeClaim *struct {
			ClaimName string `json:"claimName"`
		} `json:"persistentVolumeClaim,omitempty"`
		EmptyDir *map[string]any `json:"emptyDir,omitempty"`
	} `json:"volumes"`
}

type container struct {
	Name    string   `json:"name"`
	Image   string   `json:"image"`
	Command []string `json:"command"`
	Args    []string `json:"args,omitempty"`
	Env     []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"env,omitempty"`
	Resources *struct {
		Requests map[string]any `json:"requests,omitempty"`
		Limits   map[string]any `json:"limits,omitempty"`
	} `json:"resources,omitempty"`
	VolumeMounts []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
	} `json:"volumeMounts,omitempty"`
}

func (c container) env(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// expand does what the kubelet does to a container's command and args:
// $(NAME) becomes the variable's value, $$ a $, and a reference to an
// unknown variable stays as written (returned in unresolved).
func expand(s string, vars map[string]string) (out string, unresolved []string) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "$$"):
			b.WriteByte('$')
			i++
		case strings.HasPrefix(s[i:], "$("):
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String(), append(unresolved, s[i:])
			}
			name := s[i+2 : i+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+end+1])
				unresolved = append(unresolved, name)
			}
			i += end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), unresolved
}

// argv is c's command line in a pod whose environment is c's env plus
// extra (what Kubernetes adds), failing t on an unresolved $(NAME).
func argv(t *testing.T, c container, extra map[string]string) []string {
	t.Helper()
	vars := map[string]string{}
	for _, e := range c.Env {
		vars[e.Name] = e.Value
	}
	for k, v := range extra {
		vars[k] = v
	}
	var out []string
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		x, un := expand(a, vars)
		if len(un) > 0 {
			t.Errorf("container %s: %q refers to %v, which nothing sets: Kubernetes would pass it as written", c.Name, a, un)
		}
		out = append(out, x)
	}
	return out
}

// flagValue is the value after the one occurrence of flag in args.
func flagValue(t *testing.T, what string, args []string, flag string) string {
	t.Helper()
	var vals []string
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			vals = append(vals, args[i+1])
		}
		if strings.HasPrefix(a, flag+"=") {
			vals = append(vals, strings.TrimPrefix(a, flag+"="))
		}
	}
	if len(vals) != 1 {
		t.Errorf("%s: %s given %d times in %q, want once", what, flag, len(vals), args)
		return ""
	}
	return vals[0]
}

func hasFlag(args []string, flag string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") })
}

// readObjects decodes every YAML document of file strictly.
func readObjects(t *testing.T, file string) []object {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(bytes.ToLower(raw), []byte("secret")) {
		t.Errorf("%s mentions a secret: the manifests hold none", file)
	}
	var objs []object
	for i, doc := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(string(raw), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		var o object
		if err := yaml.UnmarshalStrict([]byte(doc), &o); err != nil {
			t.Fatalf("%s, document %d: %v", file, i+1, err)
		}
		o.doc = []byte(doc)
		objs = append(objs, o)
	}
	return objs
}

// decodeSpec decodes o's spec into spec strictly. encoding/json matches
// names regardless of case, as the API server does not: a field whose
// case differs from the API's (completionmode) is caught by encoding what
// was decoded again and looking for every field of the document in it.
func decodeSpec(t *testing.T, file string, o object, spec any) {
	t.Helper()
	what := fmt.Sprintf("%s, %s %s", file, o.Kind, o.Metadata.Name)
	if err := yaml.UnmarshalStrict(o.Spec, spec); err != nil {
		t.Fatalf("%s: spec: %v (a real field of the API? add it to this test's types)", what, err)
	}
	whole := struct {
		object
		Spec any `json:"spec"`
	}{o, spec}
	again, err := json.Marshal(whole)
	if err != nil {
		t.Fatal(err)
	}
	var written, read any
	if err := yaml.Unmarshal(o.doc, &written); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &read); err != nil {
		t.Fatal(err)
	}
	for _, p := range lostFields("", written, read) {
		t.Errorf("%s: field %s is not the API's (its case, or its place): the API server would drop it", what, p)
	}
}

// lostFields lists the object keys of a, by path, that b lacks.
func lostFields(at string, a, b any) []string {
	var out []string
	switch a := a.(type) {
	case map[string]any:
		bm, _ := b.(map[string]any)
		for k, v := range a {
			bv, ok := bm[k]
			if !ok {
				out = append(out, at+"."+k)
				continue
			}
			out = append(out, lostFields(at+"."+k, v, bv)...)
		}
	case []any:
		bs, _ := b.([]any)
		for i, v := range a {
			if i < len(bs) {
				out = append(out, lostFields(fmt.Sprintf("%s[%d]", at, i), v, bs[i])...)
			}
		}
	}
	slices.Sort(out)
	return out
}

// claimAt is the claim of the volume that c mounts at dir, or "".
func claimAt(t *testing.T, what string, p podSpec, c container, dir string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath != dir {
			continue
		}
		for _, v := range p.Volumes {
			if v.Name == m.Name {
				if v.PersistentVolumeClaim == nil {
					t.Errorf("%s: volume %s at %s is not a PersistentVolumeClaim", what, v.Name, dir)
					return ""
				}
				return v.PersistentVolumeClaim.ClaimName
			}
		}
		t.Errorf("%s: container %s mounts volume %s, which the pod does not define", what, c.Name, m.Name)
		return ""
	}
	t.Errorf("%s: container %s mounts nothing at %s", what, c.Name, dir)
	return ""
}

func quantity(v any) string { return fmt.Sprint(v) }

// tuneJob is what the tests need of the tune Job manifest.
type tuneJob struct {
	pvc    string   // the claim's name
	shards int      // completions
	dbs    []string // the --db of each index
}

func readTuneJob(t *testing.T) tuneJob {
	t.Helper()
	objs := readObjects(t, tuneJobFile)
	if len(objs) != 2 {
		t.Fatalf("%s: %d objects, want a PersistentVolumeClaim and a Job", tuneJobFile, len(objs))
	}
	var out tuneJob

	pvcObj, jobObj := objs[0], objs[1]
	if pvcObj.APIVersion != "v1" || pvcObj.Kind != "PersistentVolumeClaim" {
		t.Errorf("%s: first object is %s %s, want v1 PersistentVolumeClaim", tuneJobFile, pvcObj.APIVersion, pvcObj.Kind)
	}
	var pvc pvcSpec
	decodeSpec(t, tuneJobFile, pvcObj, &pvc)
	out.pvc = pvcObj.Metadata.Name
	if out.pvc == "" {
		t.Errorf("%s: the claim has no name", tuneJobFile)
	}
	if !slices.Equal(pvc.AccessModes, []string{"ReadWriteMany"}) {
		t.Errorf("%s: claim accessModes %q, want [ReadWriteMany]: pods on several nodes write to it", tuneJobFile, pvc.AccessModes)
	}
	if pvc.Resources.Requests["storage"] == nil {
		t.Errorf("%s: the claim requests no storage", tuneJobFile)
	}

	if jobObj.APIVersion != "batch/v1" || jobObj.Kind != "Job" {
		t.Fatalf("%s: second object is %s %s, want batch/v1 Job", tuneJobFile, jobObj.APIVersion, jobObj.Kind)
	}
	var job jobSpec
	decodeSpec(t, tuneJobFile, jobObj, &job)
	if job.CompletionMode != "Indexed" {
		t.Errorf("%s: completionMode %q, want Indexed (JOB_COMPLETION_INDEX is set only then)", tuneJobFile, job.CompletionMode)
	}
	if job.Completions == nil || *job.Completions < 1 {
		t.Fatalf("%s: completions %v, want the number of shards", tuneJobFile, job.Completions)
	}
	out.shards = *job.Completions
	if job.Parallelism == nil || *job.Parallelism != out.shards {
		t.Errorf("%s: parallelism %v, want completions (%d): every shard at once, one GPU each", tuneJobFile, job.Parallelism, out.shards)
	}
	if m := regexp.MustCompile(`(?m)^# Shards: (\d+)\.`).FindStringSubmatch(mustRead(t, tuneJobFile)); m == nil || m[1] != strconv.Itoa(out.shards) {
		t.Errorf("%s: the comment says %q, want '# Shards: %d.' as completions", tuneJobFile, m, out.shards)
	}

	p := job.Template.Spec
	// The API requires Never with backoffLimitPerIndex and podFailurePolicy;
	// without them, OnFailure restarts the container in its pod.
	switch {
	case job.BackoffLimitPerIndex != nil || job.PodFailurePolicy != nil:
		if p.RestartPolicy != "Never" {
			t.Errorf("%s: restartPolicy %q with backoffLimitPerIndex or podFailurePolicy: the API accepts only Never", tuneJobFile, p.RestartPolicy)
		}
		if job.BackoffLimitPerIndex == nil || *job.BackoffLimitPerIndex < 1 {
			t.Errorf("%s: backoffLimitPerIndex %v: a failed index must be retried (and resume its database)", tuneJobFile, job.BackoffLimitPerIndex)
		}
	case p.RestartPolicy != "OnFailure":
		t.Errorf("%s: restartPolicy %q without backoffLimitPerIndex: want OnFailure, so a failed shard reruns", tuneJobFile, p.RestartPolicy)
	}
	if len(p.InitContainers) != 0 || len(p.Containers) != 1 {
		t.Fatalf("%s: %d init containers and %d containers, want one container", tuneJobFile, len(p.InitContainers), len(p.Containers))
	}
	c := p.Containers[0]
	if job.PodFailurePolicy != nil {
		for _, r := range job.PodFailurePolicy.Rules {
			if r.OnExitCodes != nil && r.OnExitCodes.ContainerName != "" && r.OnExitCodes.ContainerName != c.Name {
				t.Errorf("%s: podFailurePolicy names container %q; the pod's is %q", tuneJobFile, r.OnExitCodes.ContainerName, c.Name)
			}
		}
	}
	if c.Image != image {
		t.Errorf("%s: image %q, want the placeholder %q", tuneJobFile, c.Image, image)
	}
	if c.Resources == nil || quantity(c.Resources.Limits["nvidia.com/gpu"]) != "1" {
		t.Errorf("%s: want resources.limits nvidia.com/gpu: 1", tuneJobFile)
	} else if r, ok := c.Resources.Requests["nvidia.com/gpu"]; ok && quantity(r) != "1" {
		t.Errorf("%s: requests nvidia.com/gpu %v, limits 1: an extended resource's request must equal its limit", tuneJobFile, r)
	}
	if claim := claimAt(t, tuneJobFile, p, c, "/data"); claim != out.pvc {
		t.Errorf("%s: /data is claim %q, the manifest's claim is %q", tuneJobFile, claim, out.pvc)
	}

	// tune reads JOB_COMPLETION_INDEX with JOB_COMPLETIONS. Kubernetes sets
	// the index; a value in the manifest would stop it from doing so.
	if _, ok := c.env("JOB_COMPLETION_INDEX"); ok {
		t.Errorf("%s: the container sets JOB_COMPLETION_INDEX: Kubernetes sets it, per index, only when the container does not", tuneJobFile)
	}
	if n, ok := c.env("JOB_COMPLETIONS"); !ok || n != strconv.Itoa(out.shards) {
		t.Errorf("%s: env JOB_COMPLETIONS=%q (set: %v), want completions, %d", tuneJobFile, n, ok, out.shards)
	}
	rawDB := flagValue(t, tuneJobFile+" (as written)", c.Args, "--db")
	if !strings.Contains(rawDB, "$(JOB_COMPLETION_INDEX)") {
		t.Errorf("%s: --db %q does not depend on $(JOB_COMPLETION_INDEX): the indexes would share a database", tuneJobFile, rawDB)
	}
	for i := range out.shards {
		args := argv(t, c, map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)})
		what := fmt.Sprintf("%s, index %d", tuneJobFile, i)
		if args[0] != "tune" {
			t.Errorf("%s: runs %q, want tune", what, args[0])
		}
		if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
			t.Errorf("%s: runs tune %s, want a tune run (flags only)", what, args[1])
		}
		if hasFlag(args, "--shard") {
			t.Errorf("%s: passes --shard, which wins over JOB_COMPLETION_INDEX: every index would tune the same shard", what)
		}
		db := flagValue(t, what, args, "--db")
		if want := fmt.Sprintf("/data/shard-%d.db", i); db != want {
			t.Errorf("%s: --db %q, want %q", what, db, want)
		}
		out.dbs = append(out.dbs, db)
		for flag, want := range map[string]string{"--kernel": "all", "--shapes": "qwen1.5b", "--tokens": "2048"} {
			if got := flagValue(t, what, args, flag); got != want {
				t.Errorf("%s: %s %q, want the default %q", what, flag, got, want)
			}
		}
	}
	return out
}

func mustRead(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestKubernetesTuneJob(t *testing.T) {
	j := readTuneJob(t)
	if j.shards < 2 {
		t.Errorf("%s: %d completions: a single shard needs no Indexed Job", tuneJobFile, j.shards)
	}
}

func TestKubernetesMergeJob(t *testing.T) {
	tj := readTuneJob(t)
	objs := readObjects(t, mergeJobFile)
	if len(objs) != 1 || objs[0].APIVersion != "batch/v1" || objs[0].Kind != "Job" {
		t.Fatalf("%s: want one batch/v1 Job", mergeJobFile)
	}
	var job jobSpec
	decodeSpec(t, mergeJobFile, objs[0], &job)
	if job.CompletionMode == "Indexed" || (job.Completions != nil && *job.Completions != 1) || (job.Parallelism != nil && *job.Parallelism != 1) {
		t.Errorf("%s: want one pod (completions and parallelism 1, not Indexed)", mergeJobFile)
	}
	p := job.Template.Spec
	if p.RestartPolicy != "OnFailure" && p.RestartPolicy != "Never" {
		t.Errorf("%s: restartPolicy %q", mergeJobFile, p.RestartPolicy)
	}
	// The steps in the order the pod runs them: init containers one after
	// another, then the container.
	steps := append(slices.Clone(p.InitContainers), p.Containers...)
	if len(p.Containers) != 1 || len(steps) != 2 {
		t.Fatalf("%s: want two steps, the merge (an init container) and the export (the container)", mergeJobFile)
	}
	var cmds [][]string
	for _, c := range steps {
		if c.Image != image {
			t.Errorf("%s: container %s: image %q, want %q", mergeJobFile, c.Name, c.Image, image)
		}
		if c.Resources != nil && c.Resources.Limits["nvidia.com/gpu"] != nil {
			t.Errorf("%s: container %s asks for a GPU: merge and export need none", mergeJobFile, c.Name)
		}
		if claim := claimAt(t, mergeJobFile, p, c, "/data"); claim != tj.pvc {
			t.Errorf("%s: container %s: /data is claim %q, the tune Job's is %q", mergeJobFile, c.Name, claim, tj.pvc)
		}
		cmds = append(cmds, argv(t, c, nil))
	}

	merge, export := cmds[0], cmds[1]
	if len(merge) != 6 || merge[0] != "tune" || merge[1] != "merge" {
		t.Fatalf("%s: first step %q, want tune merge --db SHARD,... -o /data/all.db", mergeJobFile, merge)
	}
	if out := flagValue(t, mergeJobFile, merge, "-o"); out != "/data/all.db" {
		t.Errorf("%s: merge -o %q, want /data/all.db", mergeJobFile, out)
	}
	if ins := strings.Split(flagValue(t, mergeJobFile, merge, "--db"), ","); !slices.Equal(ins, tj.dbs) {
		t.Errorf("%s: merges %q; the %d indexes of %s write %q", mergeJobFile, ins, tj.shards, tuneJobFile, tj.dbs)
	}
	if len(export) < 2 || export[0] != "tune" || export[1] != "export" {
		t.Fatalf("%s: second step %q, want tune export", mergeJobFile, export)
	}
	for flag, want := range map[string]string{"--db": "/data/all.db", "--format": "json", "-o": "/data/configs.json"} {
		if got := flagValue(t, mergeJobFile, export, flag); got != want {
			t.Errorf("%s: export %s %q, want %q", mergeJobFile, flag, got, want)
		}
	}
	if !hasFlag(export, "--ptx") {
		t.Errorf("%s: export without --ptx: a table entry is launched from its PTX file", mergeJobFile)
	}
}

// directives are the #SBATCH options of a script; sbatch reads them up to
// the first line that is neither a comment nor blank.
func directives(t *testing.T, file string) map[string]string {
	t.Helper()
	out := map[string]string{}
	inHeader := true
	for n, line := range strings.Split(mustRead(t, file), "\n") {
		trimmed := strings.TrimSpace(line)
		if inHeader && trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			inHeader = false
		}
		opt, ok := strings.CutPrefix(line, "#SBATCH ")
		if !ok {
			continue
		}
		if !inHeader {
			t.Errorf("%s:%d: #SBATCH after the first command: sbatch ignores it", file, n+1)
		}
		k, v, _ := strings.Cut(strings.TrimSpace(opt), "=")
		if _, dup := out[k]; dup {
			t.Errorf("%s:%d: %s given twice", file, n+1, k)
		}
		out[k] = v
	}
	return out
}

// defaultOf is the default a script gives variable v: V="${V:-DEFAULT}".
func defaultOf(t *testing.T, file, v string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + v + `="\$\{` + v + `:-([^}]*)\}"$`)
	m := re.FindStringSubmatch(mustRead(t, file))
	if m == nil {
		t.Fatalf("%s: no line %s=\"${%s:-DEFAULT}\"", file, v, v)
	}
	return m[1]
}

// arrayRange is the #SBATCH --array of the tune script: ids lo..hi.
func arrayRange(t *testing.T) (lo, hi int) {
	t.Helper()
	d := directives(t, arrayScript)
	m := regexp.MustCompile(`^(\d+)-(\d+)(%\d+)?$`).FindStringSubmatch(d["--array"])
	if m == nil {
		t.Fatalf("%s: #SBATCH --array=%q, want a range LO-HI (optionally %%THROTTLE), steps of one", arrayScript, d["--array"])
	}
	lo, _ = strconv.Atoi(m[1])
	hi, _ = strconv.Atoi(m[2])
	return lo, hi
}

func TestSlurmDirectives(t *testing.T) {
	lo, hi := arrayRange(t)
	n := hi - lo + 1
	if lo != 0 || n < 2 {
		t.Errorf("%s: --array=%d-%d: want 0-(N-1), N ≥ 2: task k writes shard-k.db and is shard k+1", arrayScript, lo, hi)
	}
	m := regexp.MustCompile(`(?m)^# Shards: (\d+), array task ids (\d+)-(\d+)\.`).FindStringSubmatch(mustRead(t, arrayScript))
	if m == nil {
		t.Fatalf("%s: no comment '# Shards: N, array task ids 0-(N-1).'", arrayScript)
	}
	if m[1] != strconv.Itoa(n) || m[2] != strconv.Itoa(lo) || m[3] != strconv.Itoa(hi) {
		t.Errorf("%s: the comment says %d shards, ids %s-%s; #SBATCH --array=%d-%d", arrayScript, n, m[2], m[3], lo, hi)
	}
	for _, f := range []string{arrayScript, mergeScript} {
		if got := defaultOf(t, f, "TUNE_SHARDS"); got != strconv.Itoa(n) {
			t.Errorf("%s: TUNE_SHARDS defaults to %s; the array has %d tasks", f, got, n)
		}
	}
	d := directives(t, arrayScript)
	if d["--gres"] != "gpu:1" {
		t.Errorf("%s: #SBATCH --gres=%q, want gpu:1", arrayScript, d["--gres"])
	}
	if _, ok := d["--requeue"]; !ok {
		t.Errorf("%s: no #SBATCH --requeue: a preempted task would not come back to resume", arrayScript)
	}
	dm := directives(t, mergeScript)
	if _, ok := dm["--array"]; ok {
		t.Errorf("%s: is an array; the merge is one job", mergeScript)
	}
	if g, ok := dm["--gres"]; ok {
		t.Errorf("%s: #SBATCH --gres=%s: merge and export need no GPU", mergeScript, g)
	}
	for _, f := range []string{arrayScript, mergeScript} {
		if !strings.Contains(mustRead(t, f), "\nset -euo pipefail\n") {
			t.Errorf("%s: no set -euo pipefail", f)
		}
	}
}

func bash(t *testing.T) string {
	t.Helper()
	b, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash:", err)
	}
	return b
}

func TestBashSyntax(t *testing.T) {
	sh := bash(t)
	files, err := filepath.Glob("slurm/*.sbatch")
	if err != nil || len(files) < 2 {
		t.Fatalf("slurm/*.sbatch: %q, %v", files, err)
	}
	for _, f := range files {
		if out, err := exec.Command(sh, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", f, err, out)
		}
	}
}

// stub is a stand-in for tune that logs each command line, one a line,
// its arguments separated by tabs.
func stub(t *testing.T, dir string) (bin, log string) {
	t.Helper()
	bin = filepath.Join(dir, "tune-stub")
	log = filepath.Join(dir, "calls.log")
	script := "#!/usr/bin/env bash\n{ printf 'tune'; printf '\\t%s' \"$@\"; printf '\\n'; } >>\"$STUB_LOG\"\nexit \"${STUB_EXIT:-0}\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

// runScript runs file with only env (and PATH), as Slurm would run it,
// and returns the command lines it ran tune with, and its exit error.
func runScript(t *testing.T, file string, env map[string]string) ([][]string, string, error) {
	t.Helper()
	dir := t.TempDir()
	bin, log := stub(t, dir)
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash(t), abs)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TUNE_BIN=" + bin, "STUB_LOG=" + log, "SLURM_SUBMIT_DIR=" + dir}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var calls [][]string
	if b, rerr := os.ReadFile(log); rerr == nil {
		for line := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
			calls = append(calls, strings.Split(line, "\t"))
		}
	}
	return calls, stderr.String(), err
}

// exitCode is err's exit status: 0 for nil, -1 for an error that is not
// an exit (bash not started).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// envShard is the shard tune takes from a Slurm array task's environment
// (the spec of tune's sharding): task id, counted from MIN, of MAX-MIN+1.
func envShard(env map[string]string) string {
	id, _ := strconv.Atoi(env["SLURM_ARRAY_TASK_ID"])
	lo, _ := strconv.Atoi(env["SLURM_ARRAY_TASK_MIN"])
	hi, _ := strconv.Atoi(env["SLURM_ARRAY_TASK_MAX"])
	return fmt.Sprintf("%d/%d", id-lo+1, hi-lo+1)
}

func arrayEnv(id, lo, hi int, db string) map[string]string {
	return map[string]string{
		"SLURM_ARRAY_JOB_ID":     "1000",
		"SLURM_ARRAY_TASK_ID":    strconv.Itoa(id),
		"SLURM_ARRAY_TASK_MIN":   strconv.Itoa(lo),
		"SLURM_ARRAY_TASK_MAX":   strconv.Itoa(hi),
		"SLURM_ARRAY_TASK_COUNT": strconv.Itoa(hi - lo + 1),
		"TUNE_DB_DIR":            db,
	}
}

// TestSlurmArrayTasks runs the script as each task of its array, and as a
// resubmission of one task, with a stub for tune: every task tunes one
// shard into its own database, the shards are 1..N, and the shard that
// writes shard-k.db is always k+1/N, whether tune takes it from Slurm's
// environment or from --shard.
func TestSlurmArrayTasks(t *testing.T) {
	lo, hi := arrayRange(t)
	n := hi - lo + 1
	dbDir := filepath.Join(t.TempDir(), "db dir") // a space: everything is quoted

	check := func(what string, env map[string]string, wantExplicit bool) {
		t.Helper()
		calls, stderr, err := runScript(t, arrayScript, env)
		if err != nil || len(calls) != 1 {
			t.Fatalf("%s: %v, %d calls of tune\n%s", what, err, len(calls), stderr)
		}
		args := calls[0][1:]
		id := env["SLURM_ARRAY_TASK_ID"]
		k, _ := strconv.Atoi(id)
		if db := flagValue(t, what, args, "--db"); db != filepath.Join(dbDir, "shard-"+id+".db") {
			t.Errorf("%s: --db %q, want %s/shard-%s.db", what, db, dbDir, id)
		}
		shard := envShard(env)
		if hasFlag(args, "--shard") {
			shard = flagValue(t, what, args, "--shard")
			if !wantExplicit {
				t.Errorf("%s: passes --shard %s where tune reads the shard from Slurm's environment", what, shard)
			}
		} else if wantExplicit {
			t.Errorf("%s: no --shard, so tune would take shard %s from this smaller array's environment", what, shard)
		}
		if want := fmt.Sprintf("%d/%d", k+1, n); shard != want {
			t.Errorf("%s: tune would tune shard %s into shard-%s.db; the full array put shard %s there", what, shard, id, want)
		}
		for flag, want := range map[string]string{"--kernel": "all", "--shapes": "qwen1.5b", "--tokens": "2048"} {
			if got := flagValue(t, what, args, flag); got != want {
				t.Errorf("%s: %s %q, want %q", what, flag, got, want)
			}
		}
		if hasFlag(args, "--dtype") {
			t.Errorf("%s: --dtype without TUNE_DTYPE", what)
		}
	}
	for id := lo; id <= hi; id++ {
		check(fmt.Sprintf("task %d of %d-%d", id, lo, hi), arrayEnv(id, lo, hi, dbDir), false)
	}
	// sbatch --array=K: resubmitted alone, the task's environment is an
	// array of one.
	check(fmt.Sprintf("task %d resubmitted alone", hi), arrayEnv(hi, hi, hi, dbDir), true)
	check(fmt.Sprintf("task %d resubmitted alone", lo), arrayEnv(lo, lo, lo, dbDir), true)
	if _, err := os.Stat(dbDir); err != nil {
		t.Errorf("the database directory was not created: %v", err)
	}
}

func TestSlurmArraySettings(t *testing.T) {
	lo, hi := arrayRange(t)
	dbDir := t.TempDir()
	env := arrayEnv(lo, lo, hi, dbDir)
	env["TUNE_SHAPES"] = "m=64,n=128"
	env["TUNE_DTYPE"] = "bf16"
	env["TUNE_KERNEL"] = "relu_bwd,gelu_bwd"
	env["TUNE_EXTRA_ARGS"] = "--final-rounds 2"
	calls, stderr, err := runScript(t, arrayScript, env)
	if err != nil || len(calls) != 1 {
		t.Fatalf("%v, %d calls\n%s", err, len(calls), stderr)
	}
	want := []string{"tune", "--kernel", "relu_bwd,gelu_bwd", "--shapes", "m=64,n=128", "--dtype", "bf16",
		"--db", filepath.Join(dbDir, "shard-0.db"), "--final-rounds", "2"}
	if !slices.Equal(calls[0], want) {
		t.Errorf("ran %q, want %q (no --tokens with shape specs)", calls[0], want)
	}
}

// TestSlurmArrayRefusals: what would tune the wrong shard stops before
// tune runs.
func TestSlurmArrayRefusals(t *testing.T) {
	lo, hi := arrayRange(t)
	n := hi - lo + 1
	dbDir := t.TempDir()
	bigger := arrayEnv(n, 0, 2*n-1, dbDir) // --array=0-(2N-1) with TUNE_SHARDS left at N
	firstOfBigger := arrayEnv(0, 0, 2*n-1, dbDir)
	extra := arrayEnv(lo, lo, hi, dbDir)
	extra["TUNE_EXTRA_ARGS"] = "--shard 1/2"
	extraDB := arrayEnv(lo, lo, hi, dbDir)
	extraDB["TUNE_EXTRA_ARGS"] = "--db=/tmp/x.db"
	comma := arrayEnv(lo, lo, hi, filepath.Join(dbDir, "a,b"))
	badShards := arrayEnv(lo, lo, hi, dbDir)
	badShards["TUNE_SHARDS"] = "four"
	for what, env := range map[string]map[string]string{
		"not an array task":                                     {"TUNE_DB_DIR": dbDir},
		"an id past TUNE_SHARDS-1":                              bigger,
		"a task of an array longer than TUNE_SHARDS":            firstOfBigger,
		"--shard in TUNE_EXTRA_ARGS":                            extra,
		"--db in TUNE_EXTRA_ARGS":                               extraDB,
		"a comma in TUNE_DB_DIR (merge's --db is a comma list)": comma,
		"TUNE_SHARDS not a number":                              badShards,
	} {
		calls, stderr, err := runScript(t, arrayScript, env)
		if exitCode(err) != 2 || len(calls) != 0 {
			t.Errorf("%s: exit %v, %d calls of tune; want a refusal, exit 2\n%s", what, err, len(calls), stderr)
		} else if !strings.Contains(stderr, "tune-array.sbatch: ") {
			t.Errorf("%s: stderr %q does not say why", what, stderr)
		}
	}
}

func TestSlurmMerge(t *testing.T) {
	lo, hi := arrayRange(t)
	dbDir := filepath.Join(t.TempDir(), "db dir")
	if err := os.Mkdir(dbDir, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TUNE_DB_DIR": dbDir}
	file := func(k int, ext string) string { return filepath.Join(dbDir, fmt.Sprintf("shard-%d.%s", k, ext)) }
	touch := func(p string) {
		t.Helper()
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Every shard has its database, the last has no mark (its task did
	// not finish): nothing runs.
	for k := lo; k <= hi; k++ {
		touch(file(k, "db"))
		if k < hi {
			touch(file(k, "done"))
		}
	}
	if calls, stderr, err := runScript(t, mergeScript, env); exitCode(err) != 2 || len(calls) != 0 || !strings.Contains(stderr, "tasks "+strconv.Itoa(hi)+" have not finished") {
		t.Errorf("task %d unfinished: exit %v, calls %q, stderr %q; want a refusal naming it", hi, err, calls, stderr)
	}
	touch(file(hi, "done"))
	// A leftover of another count is not merged, and a shard that held no
	// work item (its mark, no database) is left out.
	touch(file(hi+1, "db"))
	touch(file(hi+1, "done"))
	if err := os.Remove(file(lo, "db")); err != nil {
		t.Fatal(err)
	}
	var shards []string
	for k := lo + 1; k <= hi; k++ {
		shards = append(shards, file(k, "db"))
	}
	all := filepath.Join(dbDir, "all.db")
	for _, again := range []bool{false, true} {
		if again {
			touch(all) // a second merge goes into the first one's all.db
		}
		calls, stderr, err := runScript(t, mergeScript, env)
		if err != nil || len(calls) != 2 {
			t.Fatalf("exit %v, %d calls\n%s", err, len(calls), stderr)
		}
		if want := []string{"tune", "merge", "--db", strings.Join(shards, ","), "-o", all}; !slices.Equal(calls[0], want) {
			t.Errorf("first call %q, want %q", calls[0], want)
		}
		export := calls[1]
		if len(export) < 2 || export[1] != "export" {
			t.Fatalf("second call %q, want tune export", export)
		}
		for flag, want := range map[string]string{"--db": all, "--format": "json", "-o": filepath.Join(dbDir, "configs.json")} {
			if got := flagValue(t, "export", export, flag); got != want {
				t.Errorf("export %s %q, want %q", flag, got, want)
			}
		}
		if !hasFlag(export, "--ptx") {
			t.Errorf("export %q without --ptx: a table entry is launched from its PTX file", export)
		}
	}
	// No shard with a database: nothing to merge.
	for k := lo + 1; k <= hi; k++ {
		if err := os.Remove(file(k, "db")); err != nil {
			t.Fatal(err)
		}
	}
	if calls, stderr, err := runScript(t, mergeScript, env); exitCode(err) != 2 || len(calls) != 0 {
		t.Errorf("no shard database: exit %v, calls %q; want a refusal\n%s", err, calls, stderr)
	}
}

// TestSlurmDoneMark: a task leaves shard-k.done only when tune succeeds,
// and removes an earlier one before it starts.
func TestSlurmDoneMark(t *testing.T) {
	lo, hi := arrayRange(t)
	dbDir := t.TempDir()
	mark := filepath.Join(dbDir, fmt.Sprintf("shard-%d.done", lo))
	env := arrayEnv(lo, lo, hi, dbDir)
	if _, stderr, err := runScript(t, arrayScript, env); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("tune succeeded, no mark: %v", err)
	}
	env["STUB_EXIT"] = "1" // killed or failed: the re-run fails again
	calls, stderr, err := runScript(t, arrayScript, env)
	if exitCode(err) != 1 || len(calls) != 1 {
		t.Errorf("tune exits 1: the script exits %v after %d calls, want tune's status 1\n%s", err, len(calls), stderr)
	}
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Errorf("tune failed, the mark of the earlier success is still there: %v", err)
	}
}
