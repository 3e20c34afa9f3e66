package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/store"
)

// badInputFiles makes a directory with a results database holding a run,
// a file of notes, an earlier crosscheck output, the database truncated
// ({trunc}) and with its winners table dropped ({dropped}), an empty
// peers file, and for replay's .gz databases a file that is not gzip
// ({notgz}), a gzip stream cut short ({cutgz}) and the truncated database
// gzipped ({truncgz}); the matrix's arguments name them as {db},
// {notes}, {xcheck}, {trunc}, {dropped}, {peers}, {notgz}, {cutgz},
// {truncgz} and {dir}, the committed pool table as {table}, the recorded
// activations database as {act}, a file name that fits in a
// directory but whose temporary file's name does not as {long}, and
// model configs cut short ({cutcfg}), of an unknown model_type
// ({gemma3cfg}), without hidden_size ({nohidden}) and with KV heads that
// do not divide the heads ({kv3cfg}). badInputFiles copies it for each
// case.
func badInputTemplate(t *testing.T) map[string]string {
	t.Helper()
	dir, err := os.MkdirTemp("", "badinput") // t.TempDir's name holds the subtest's, braces and all
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	files := map[string]string{"{dir}": dir, "{db}": filepath.Join(dir, "tune.db"),
		"{notes}": filepath.Join(dir, "notes.txt"), "{xcheck}": filepath.Join(dir, "x.jsonl"),
		"{trunc}": filepath.Join(dir, "trunc.db"), "{dropped}": filepath.Join(dir, "dropped.db"),
		"{peers}": filepath.Join(dir, "peers.jsonl"), "{table}": filepath.Join("..", "..", "configs", "h200", "pool.json"),
		"{notgz}": filepath.Join(dir, "notes.db.gz"), "{cutgz}": filepath.Join(dir, "cut.db.gz"), "{truncgz}": filepath.Join(dir, "trunc.db.gz"),
		"{act}":  filepath.Join("..", "..", "testdata", "h200-activations.db"),
		"{long}": strings.Repeat("n", 252)} // 252 bytes: "." + it + "." + digits, or it + ".tmp" + digits, pass NAME_MAX (255)
	for _, name := range []string{"cutcfg", "gemma3cfg", "nohidden", "kv3cfg"} {
		files["{"+name+"}"] = filepath.Join(dir, name+".json")
	}
	db, err := store.Open(files["{db}"])
	if err != nil {
		t.Fatal(err)
	}
	run, err := db.BeginRun(store.Run{GPUName: "NVIDIA H200"})
	if err != nil {
		t.Fatal(err)
	}
	k := store.Key{Kernel: "relu_bwd", ShapeKey: "n=8,dtype=f32", Params: "vec=1", PTXSHA256: "ab", GPUUUID: "GPU-1", Driver: "1", Mode: eval.Cold}
	if _, err := db.Record(run, store.Evaluation{Key: k, Status: eval.OK, Samples: []float64{1, 2, 3}, MedianUS: 2}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	good, err := os.ReadFile(files["{db}"])
	if err != nil {
		t.Fatal(err)
	}
	truncgz := gzipped(t, good[:len(good)/3])
	for name, content := range map[string]string{"{notes}": "my notes\n", "{xcheck}": `{"kind":"case","verdict":"identical"}` + "\n",
		"{trunc}": string(good[:len(good)/3]), "{dropped}": string(good), "{peers}": "",
		"{notgz}": "my notes, not gzipped\n", "{cutgz}": string(gzipped(t, good)[:200]), "{truncgz}": string(truncgz),
		"{cutcfg}":    "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 2048,\n",
		"{gemma3cfg}": `{"model_type": "gemma3", "text_config": {"hidden_size": 2560}}`,
		"{nohidden}":  `{"model_type": "llama", "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32, "vocab_size": 128256}`,
		"{kv3cfg}": `{"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
			"num_attention_heads": 32, "num_key_value_heads": 3, "vocab_size": 32000}`} {
		if err := os.WriteFile(files[name], []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := sql.Open("sqlite3", files["{dropped}"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("DROP TABLE winners"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	return files
}

// badInputFiles is a copy of the files of tmpl (badInputTemplate) in a
// directory of its own, removed when t ends, named by the same keys.
func badInputFiles(t *testing.T, tmpl map[string]string) map[string]string {
	t.Helper()
	dir, err := os.MkdirTemp("", "badinput")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	es, err := os.ReadDir(tmpl["{dir}"])
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(tmpl["{dir}"], e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{}
	for k, v := range tmpl {
		if rel, err := filepath.Rel(tmpl["{dir}"], v); err == nil && !strings.HasPrefix(rel, "..") {
			v = filepath.Join(dir, rel)
		}
		files[k] = v
	}
	return files
}

// gzipped is data compressed with gzip.
func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// snapshot hashes every file of dir by name.
func snapshot(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][32]byte{}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil {
			out[e.Name()] = sha256.Sum256(b)
		}
	}
	return out
}

// badInputs is the matrix: each bad command line, its exit code, a
// fragment of its message, and whether it gets as far as opening a GPU
// (those cases run only on machines without a driver, where they fail
// there, exit 1). In every case the files of badInputFiles stay as they
// were and no file is added beside them.
var badInputs = []struct {
	args       []string
	code       int
	want       string
	needsNoGPU bool
}{
	// Flags, as Go's flag package would have reported them.
	{[]string{"--bogus"}, 2, "unknown flag --bogus (flags of tune: --budget, --compile-helpers, --compiler, --cubin-cache, --db, --device, --devices, --dtype, --final-rounds, --fresh, --kernel, --mode, --no-abandon, --no-cache, --params, --ref-cache, --seed, --shapes, --shard, --strategy, --tokens)", false},
	{[]string{"--tokens", "abc"}, 2, `--tokens "abc": want positive token counts separated by commas`, false},
	{[]string{"--fresh=maybe"}, 2, `--fresh "maybe": want true or false`, false},
	{[]string{"--seed", "-1"}, 2, `--seed "-1": want a non-negative integer`, false},
	{[]string{"--kernel", "relu_bwd", "--shapes"}, 2, "--shapes needs a value: --shapes PRESET|CONFIG|SPEC", false},
	{[]string{"--strategy", "auto"}, 2, `--strategy: strategy "auto": want exhaustive, model, random, halving`, false},
	{[]string{"list", "--kernel", "x"}, 2, "unknown flag --kernel (tune list takes no flags)", false},
	{[]string{"list", "extra"}, 2, `unexpected argument "extra"`, false},
	{[]string{"frobnicate"}, 2, `unknown command "frobnicate" (commands: tune, bench, check, crosscheck, devices, emit, export, list, merge, regress, replay, report, runs, show, help)`, false},
	{[]string{"help", "bogus"}, 2, `no help topic "bogus"`, false},
	// Conflicts.
	{[]string{"--kernel", "relu_bwd", "--kernel", "gelu_bwd"}, 2, "--kernel given twice: give it once", false},
	{[]string{"--kernel", "relu_bwd,relu_bwd"}, 2, "relu_bwd named twice", false},
	{[]string{"--kernel", "relu_bwd", "--shapes", "n=8,dtype=bf16", "--dtype", "f32"}, 2, "--shapes n=8,dtype=bf16 asks for dtype=bf16 but --dtype is f32", false},
	{[]string{"--kernel", "relu_bwd", "--shapes", "n=8", "--tokens", "64"}, 2, "--tokens sets the rows of a preset's shapes", false},
	{[]string{"--tokens", "0"}, 2, `--tokens "0": want positive token counts`, false},
	{[]string{"--tokens", "-3"}, 2, `--tokens "-3": want positive token counts`, false},
	{[]string{"--tokens", "512,512"}, 2, `--tokens "512,512": 512 is given twice`, false},
	// Values.
	{[]string{"--kernel", "nope"}, 2, `unknown kernel "nope" (kernels: cross_entropy_bwd, flash_attn_bwd, gelu_bwd,`, false},
	{[]string{"--shapes", "llama7b"}, 2, `malformed shape "llama7b"`, false},
	{[]string{"--shapes", "m=0,n=4"}, 2, "no kernel takes m=0,n=4 (cross_entropy_bwd takes t=T,v=V,smooth=SMOOTH (optional),labels=i32|i64 (optional, default i32),zloss=ZLOSS (optional, default 0),inplace=INPLACE (optional, default 0) (got m=0,n=4); flash_attn_bwd takes b=B (optional, default 1),s=S,hq=HQ,hk=HK,d=D,causal=CAUSAL (optional, default 0) (got m=0,n=4); gelu_bwd m=0 is not positive;", false},
	{[]string{"--kernel", "relu_bwd", "--shapes", "k=4"}, 2, "takes m=M (optional),n=N (got k=4)", false},
	{[]string{"--shapes", "k=4"}, 2, "no kernel takes k=4", false},
	{[]string{"--kernel", "relu_bwd", "--dtype", "f64"}, 2, "relu_bwd supports none of --dtype f64 (dtypes: [f32 f16 bf16])", false},
	{[]string{"--dtype", "int4"}, 2, `unknown dtype "int4"`, false},
	{[]string{"--mode", "warm"}, 2, `--mode: mode "warm": want cold or hot`, false},
	{[]string{"--budget", "-1"}, 2, `--budget "-1": want a count`, false},
	{[]string{"--budget", "150%"}, 2, `--budget "150%": want a count or a percentage in (0, 100]`, false},
	{[]string{"replay"}, 2, "replay needs --db FILE", false},
	{[]string{"replay", "--db", "testdata/none.db"}, 2, "--db", false},
	{[]string{"replay", "--db", "x.db", "--seeds", "0"}, 2, "--seeds must be 1 to 1000, got 0", false},
	{[]string{"--device", "-1"}, 2, "--device must be a GPU ordinal", false},
	{[]string{"--params", "vec"}, 2, "malformed params", false},
	{[]string{"--kernel", "relu_bwd", "--params", "warps=4"}, 2, `relu_bwd has no axis "warps" (axes: block, vec, ept, grid, maxnreg, cache)`, false},
	{[]string{"--kernel", "relu_bwd", "--dtype", "f32", "--params", "vec=8"}, 2, "vec=8 not accepted for m=2048,n=8960,dtype=f32 (values: 1, 2, 4)", false},
	{[]string{"--kernel", "relu_bwd", "--tokens", "99999999999"}, 2, "relu_bwd: m=99999999999 must be in 1..2147483647", false},
	// --shapes CONFIG: a model's config.json, refused naming the file and the field.
	{[]string{"--kernel", "relu_bwd", "--shapes", "{dir}/missing.json"}, 2, "--shapes {dir}/missing.json: no such file or directory", false},
	{[]string{"--kernel", "relu_bwd", "--shapes", "{dir}"}, 2, "--shapes {dir} is a directory, want a Hugging Face config.json", false},
	{[]string{"--kernel", "relu_bwd", "--shapes", "{notes}"}, 2, "--shapes {dir}/notes.txt: not JSON: line 1: invalid character 'm' looking for beginning of value", false},
	{[]string{"--kernel", "relu_bwd", "--shapes", "{cutcfg}"}, 2, "--shapes {dir}/cutcfg.json: not JSON: line 4: unexpected end of JSON input", false},
	{[]string{"--kernel", "relu_bwd", "--shapes", "{gemma3cfg}"}, 2, `--shapes {dir}/gemma3cfg.json: model_type "gemma3" is not one tune reads (model types: gemma, gemma2, llama, mistral, phi, phi3, qwen2)`, false},
	{[]string{"check", "--kernel", "relu_bwd", "--shapes", "{nohidden}", "--tokens", "64"}, 2, "--shapes {dir}/nohidden.json: no hidden_size (a llama config gives hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, vocab_size)", false},
	{[]string{"--kernel", "relu_bwd", "--shapes", "{kv3cfg}"}, 2, "--shapes {dir}/kv3cfg.json: num_key_value_heads=3 does not divide num_attention_heads=32", false},
	// --db is checked before a GPU starts; a usable one is left as it was.
	{[]string{"--kernel", "relu_bwd", "--db", "{notes}"}, 2, "not a gradtune database (the file is not an SQLite database; left unchanged)", false},
	{[]string{"--kernel", "relu_bwd", "--db", "{dir}/missing/tune.db"}, 2, "--db {dir}/missing/tune.db: cannot receive an output file: directory {dir}/missing does not exist", false},
	{[]string{"--kernel", "relu_bwd", "--shapes", "n=8", "--db", "{db}"}, 1, "NVIDIA driver (libcuda.so.1) not found", true},
	// emit.
	{[]string{"emit", "--kernel", "relu_bwd"}, 2, "emit needs --shapes", false},
	{[]string{"emit", "--kernel", "relu_bwd,gelu_bwd", "--shapes", "n=4"}, 2, "emit needs one --kernel", false},
	{[]string{"emit", "--kernel", "relu_bwd", "--shapes", "n=4"}, 2, "emit needs exactly one shape and dtype", false},
	{[]string{"emit", "--kernel", "relu_bwd", "--shapes", "n=4", "--dtype", "f32,f16"}, 2, "emit takes one --dtype", false},
	{[]string{"emit", "--kernel", "relu_bwd", "--shapes", "n=4", "--dtype", "f32", "--params", "vec=3"}, 2, "vec=3 not accepted for n=4,dtype=f32 (values: 1, 2, 4)", false},
	// check: validation, the family's limits on preset shapes, memory.
	{[]string{"check", "--shapes", "n=4"}, 2, "check needs --kernel", false},
	{[]string{"check", "--kernel", "relu_bwd"}, 2, "check needs --shapes", false},
	{[]string{"check", "--kernel", "relu_bwd", "--shapes", "n=4", "--mode", "hot"}, 2, "--mode does not apply to tune check: check validates on the CPU interpreter and never times", false},
	{[]string{"check", "--kernel", "relu_bwd", "--shapes", "n=4", "--db={db}"}, 2, "--db does not apply to tune check", false},
	{[]string{"check", "--kernel", "relu_bwd", "--shapes", "n=4", "--sample", "-1"}, 2, "--sample must be 0", false},
	{[]string{"check", "--kernel", "relu_bwd", "--shapes", "qwen1.5b", "--tokens", "99999999999"}, 2, "--shapes qwen1.5b with 99999999999 tokens: relu_bwd: m=99999999999 must be in 1..2147483647", false},
	{[]string{"check", "--kernel", "rmsnorm_bwd", "--shapes", "qwen1.5b", "--tokens", "3000000000"}, 2, "with 3000000000 tokens: rmsnorm_bwd: m=3000000000 must be in 1..2147483647", false},
	{[]string{"check", "--kernel", "softmax_bwd", "--shapes", "m=40000,n=50000", "--dtype", "f32"}, 2, "softmax_bwd m=40000,n=50000,dtype=f32 needs 89.4 GiB of host memory on the interpreter, more than the 16.0 GiB of test memory", false},
	{[]string{"check", "--kernel", "relu_bwd", "--shapes", "n=2147483647", "--dtype", "f32"}, 2, "relu_bwd n=2147483647,dtype=f32 needs 96.0 GiB of host memory", false},
	{[]string{"check", "--kernel", "all", "--shapes", "k=4"}, 2, "no kernel takes k=4", false},
	{[]string{"check", "--kernel", "nope", "--shapes", "n=4"}, 2, `unknown kernel "nope"`, false},
	// crosscheck: never over a database, over other files only with --force.
	{[]string{"crosscheck", "--cases", "5"}, 2, "crosscheck needs --out", false},
	{[]string{"crosscheck", "--out", "{dir}/new.jsonl", "--cases", "0"}, 2, "--cases must be positive", false},
	{[]string{"crosscheck", "--out", "{dir}/new.jsonl", "--kernel", "nope"}, 2, `unknown kernel "nope"`, false},
	{[]string{"crosscheck", "--out", "{db}"}, 2, "is an SQLite database: crosscheck never writes over one", false},
	{[]string{"crosscheck", "--out", "{db}", "--force"}, 2, "even with --force", false},
	{[]string{"crosscheck", "--out", "{notes}"}, 2, "exists and is not a crosscheck output (JSON lines of cases and probes): --force replaces it", false},
	{[]string{"crosscheck", "--out", "{dir}"}, 2, "is a directory", false},
	{[]string{"crosscheck", "--out", "{notes}", "--force", "--kernel", "relu_bwd", "--cases", "1"}, 1, "libcuda.so.1", true},
	{[]string{"crosscheck", "--out", "{xcheck}", "--kernel", "relu_bwd", "--cases", "1"}, 1, "libcuda.so.1", true},

	// Issue 24. A damaged database (truncated, a table dropped) or a
	// directory as --db is a usage error naming the flag, the path and the
	// fault, in the same words from every command that reads or writes
	// one, before any GPU opens.
	{[]string{"show", "--db", "{trunc}"}, 2, "--db: store {dir}/trunc.db: read schema version: damaged gradtune database: database disk image is malformed (the file is truncated or was changed by another program)", false},
	{[]string{"report", "--db", "{trunc}", "-o", "{dir}/r"}, 2, "--db: store {dir}/trunc.db: read schema version: damaged gradtune database: database disk image is malformed", false},
	{[]string{"export", "--db", "{trunc}", "-o", "{dir}/t.json"}, 2, "--db: store {dir}/trunc.db: read schema version: damaged gradtune database: database disk image is malformed", false},
	{[]string{"runs", "--db", "{trunc}"}, 2, "--db: store {dir}/trunc.db: read schema version: damaged gradtune database: database disk image is malformed", false},
	{[]string{"replay", "--db", "{trunc}"}, 2, "--db: store {dir}/trunc.db: read schema version: damaged gradtune database: database disk image is malformed", false},
	{[]string{"regress", "--baseline", "{db}", "--db", "{trunc}"}, 2, "--db: store {dir}/trunc.db: read schema version: damaged gradtune database: database disk image is malformed", false},
	{[]string{"--kernel", "relu_bwd", "--db", "{trunc}"}, 2, "--db: store {dir}/trunc.db: read schema version: damaged gradtune database: database disk image is malformed", false},
	{[]string{"bench", "--configs", "{table}", "--db", "{trunc}"}, 2, "--db: store {dir}/trunc.db: read schema version: damaged gradtune database: database disk image is malformed", false},
	{[]string{"show", "--db", "{dropped}"}, 2, "--db: store {dir}/dropped.db: check the schema: damaged gradtune database: table winners is missing (schema version 2 has tables evaluations, runs, variants, winners)", false},
	{[]string{"report", "--db", "{dropped}", "-o", "{dir}/r"}, 2, "--db: store {dir}/dropped.db: check the schema: damaged gradtune database: table winners is missing", false},
	{[]string{"export", "--db", "{dropped}", "-o", "{dir}/t.json"}, 2, "--db: store {dir}/dropped.db: check the schema: damaged gradtune database: table winners is missing", false},
	{[]string{"runs", "--db", "{dropped}"}, 2, "--db: store {dir}/dropped.db: check the schema: damaged gradtune database: table winners is missing", false},
	{[]string{"replay", "--db", "{dropped}"}, 2, "--db: store {dir}/dropped.db: check the schema: damaged gradtune database: table winners is missing", false},
	{[]string{"regress", "--baseline", "{dropped}", "--db", "{db}"}, 2, "--baseline: store {dir}/dropped.db: check the schema: damaged gradtune database: table winners is missing", false},
	{[]string{"--kernel", "relu_bwd", "--db", "{dropped}"}, 2, "--db: store {dir}/dropped.db: check the schema: damaged gradtune database: table winners is missing", false},
	{[]string{"bench", "--configs", "{table}", "--db", "{dropped}"}, 2, "--db: store {dir}/dropped.db: check the schema: damaged gradtune database: table winners is missing", false},
	{[]string{"show", "--db", "{dir}"}, 2, "--db: store: open {dir}: not a gradtune database: it is a directory, want a database file (for example {dir}/tune.db)", false},
	{[]string{"report", "--db", "{dir}", "-o", "{dir}/r"}, 2, "--db: store: open {dir}: not a gradtune database: it is a directory", false},
	{[]string{"export", "--db", "{dir}", "-o", "{dir}/t.json"}, 2, "--db: store: open {dir}: not a gradtune database: it is a directory", false},
	{[]string{"runs", "--db", "{dir}"}, 2, "--db: store: open {dir}: not a gradtune database: it is a directory", false},
	{[]string{"replay", "--db", "{dir}"}, 2, "--db: store: open {dir}: not a gradtune database: it is a directory", false},
	{[]string{"regress", "--baseline", "{db}", "--db", "{dir}"}, 2, "--db: store: open {dir}: not a gradtune database: it is a directory", false},
	{[]string{"--kernel", "relu_bwd", "--db", "{dir}"}, 2, "--db: store: open {dir}: not a gradtune database: it is a directory", false},
	{[]string{"bench", "--configs", "{table}", "--db", "{dir}"}, 2, "--db: store: open {dir}: not a gradtune database: it is a directory", false},
	// replay's gzipped databases: the path given, never the file unpacked.
	{[]string{"replay", "--db", "{notgz}"}, 2, "--db {dir}/notes.db.gz: not a gzip file", false},
	{[]string{"replay", "--db", "{cutgz}"}, 2, "--db {dir}/cut.db.gz: damaged gzip file: unexpected EOF", false},
	{[]string{"replay", "--db", "{truncgz}"}, 2, "--db: store {dir}/trunc.db.gz (unpacked): read schema version: damaged gradtune database", false},
	{[]string{"replay", "--db", "{dir}/missing.db.gz"}, 2, "--db {dir}/missing.db.gz: no such file or directory", false},
	// An output path in a missing directory, in the same words.
	{[]string{"export", "--db", "{db}", "-o", "{dir}/missing/t.json"}, 2, "{dir}/missing/t.json: cannot receive an output file: directory {dir}/missing does not exist", false},
	{[]string{"report", "--db", "{db}", "-o", "{dir}/missing/r"}, 2, "{dir}/missing/r: cannot receive an output file: parent directory {dir}/missing does not exist", false},
	{[]string{"crosscheck", "--out", "{dir}/missing/x.jsonl"}, 2, "--out {dir}/missing/x.jsonl: cannot receive an output file: directory {dir}/missing does not exist", false},
	{[]string{"crosscheck", "--out", "{notes}/x.jsonl"}, 2, "--out {notes}/x.jsonl: cannot receive an output file: {notes} is not a directory", false},
	{[]string{"bench", "--configs", "{table}", "--db", "{dir}/missing/n.db"}, 2, "--db {dir}/missing/n.db: cannot receive an output file: directory {dir}/missing does not exist", false},
	// An output its directory will not take is named, not the temporary
	// file written on the way (here a name that fits but whose temporary
	// file's does not; a read-only directory: TestProbeNamesTheOutput).
	{[]string{"export", "--db", "{db}", "-o", "{dir}/{long}"}, 2, "-o {dir}/{long}: cannot create a file in {dir}: file name too long", false},
	{[]string{"crosscheck", "--out", "{dir}/{long}", "--kernel", "relu_bwd", "--cases", "1"}, 2, "--out {dir}/{long}: cannot create a file in {dir}: file name too long", false},
	{[]string{"--kernel", "relu_bwd", "--shapes", "n=8", "--db", "{dir}/{long}"}, 2, "--db {dir}/{long}: cannot create a file in {dir}: file name too long", false},
	{[]string{"bench", "--configs", "{table}", "--db", "{dir}/{long}"}, 2, "--db {dir}/{long}: cannot create a file in {dir}: file name too long", false},
	// Every flag is checked before the GPU opens and before a database is read.
	{[]string{"--kernel", "relu_bwd", "--compile-helpers", "many"}, 2, `--compile-helpers "many": want auto or a count`, false},
	{[]string{"--kernel", "relu_bwd", "--compile-helpers", "-2"}, 2, `--compile-helpers "-2": want auto or a count`, false},
	{[]string{"--kernel", "relu_bwd", "--compiler", "nvcc"}, 2, `--compiler "nvcc": want jit (the driver's JIT), link (the driver's linker) or ptxas`, false},
	{[]string{"--kernel", "relu_bwd", "--no-cache", "--cubin-cache", "{dir}/c"}, 2, "--no-cache and --cubin-cache {dir}/c contradict each other", false},
	{[]string{"--kernel", "relu_bwd", "--compile-helpers", "0", "--compiler", "ptxas"}, 2, "--compile-helpers 0 compiles in the worker", false},
	{[]string{"--kernel", "relu_bwd", "--compile-helpers", "many", "--db", "{trunc}"}, 2, `--compile-helpers "many": want auto or a count`, false},
	{[]string{"--kernel", "relu_bwd", "--compiler", "nvcc", "--db", "{trunc}"}, 2, `--compiler "nvcc"`, false},
	{[]string{"--kernel", "relu_bwd", "--final-rounds", "-1", "--db", "{trunc}"}, 2, "--final-rounds -1: want 0 or more", false},
	{[]string{"--kernel", "relu_bwd", "--mode", "warm", "--db", "{trunc}"}, 2, `--mode: mode "warm"`, false},
	{[]string{"export", "--db", "{trunc}", "--format", "go", "--package", "my-pkg", "-o", "{dir}/t.go"}, 2, `export: package "my-pkg": want a Go identifier`, false},
	{[]string{"export", "--db", "{trunc}", "--format", "go", "--name", "9bad", "-o", "{dir}/t.go"}, 2, `export: name "9bad": want a Go identifier`, false},
	{[]string{"export", "--db", "{trunc}", "--format", "json", "--name", "Pool", "-o", "{dir}/t.json"}, 2, "is for --format go or c, not json", false},
	{[]string{"export", "--db", "{trunc}", "--kernel", "nope_bwd", "-o", "{dir}/t.json"}, 2, `--kernel: unknown kernel "nope_bwd"`, false},
	{[]string{"show", "--db", "{trunc}", "--kernel", "nope_bwd"}, 2, `--kernel: unknown kernel "nope_bwd"`, false},
	{[]string{"report", "--db", "{trunc}", "--run", "-1", "-o", "{dir}/r"}, 2, "--run -1: want a run id", false},
	{[]string{"report", "--db", "{db}", "--step", "nope", "-o", "{dir}/r"}, 2, `--step "nope": neither a preset (qwen1.5b) nor a model's config.json`, false},
	{[]string{"report", "--db", "{db}", "--step-tokens", "512", "-o", "{dir}/r"}, 2, "--step-tokens sets the tokens of --step's model; give --step too", false},
	{[]string{"report", "--db", "{db}", "--step", "qwen1.5b", "--step-tokens", "0", "-o", "{dir}/r"}, 2, "--step-tokens 0: want a positive token count", false},
	{[]string{"report", "--db", "{trunc}", "-o", "{notes}"}, 2, "{notes}: cannot receive an output file: it is a file, want a directory", false},
	{[]string{"report", "--db", "{trunc}", "-o", "{dir}/r", "--peers", "{peers}"}, 2, "--peers {dir}/peers.jsonl: malformed peers file: no rows", false},
	{[]string{"replay", "--db", "{trunc}", "--strategy", "auto"}, 2, `--strategy: strategy "auto"`, false},
	{[]string{"regress", "--baseline", "{trunc}", "--db", "{trunc}", "--threshold", "lots"}, 2, `--threshold "lots": want a percentage`, false},
	{[]string{"bench", "--configs", "{table}", "--db", "{trunc}", "--mode", "warm"}, 2, `--mode: mode "warm"`, false},
	{[]string{"bench", "--configs", "{table}", "--db", "{trunc}", "--kernel", "nope_bwd"}, 2, `--kernel: unknown kernel "nope_bwd"`, false},
	// Messages that name what was wrong, once.
	{[]string{"show", "--db", "{db}", "--kernel", "gemm_bwd"}, 2, "no results for gemm_bwd in {dir}/tune.db (kernels recorded there: relu_bwd)", false},
	{[]string{"show", "--db", "{act}", "--kernel", "gemm_bwd"}, 2, "no results for gemm_bwd in {act} (kernels recorded there: gelu_bwd, relu_bwd, silu_bwd)", false},
	{[]string{"show", "--db", "{db}", "--kernel", "nope_bwd"}, 2, `--kernel: unknown kernel "nope_bwd" (kernels: cross_entropy_bwd, flash_attn_bwd, gelu_bwd, gemm_bwd,`, false},
	{[]string{"check", "--kernel", "nf4_gemm_bwd", "--shapes", "m=64,n=100,k=64"}, 2, "--shapes: nf4_gemm_bwd: n=100 is not a multiple of the block size 64 (n, the reduction, takes whole blocks)", false},
	{[]string{"check", "--kernel", "nf4_gemm_bwd", "--shapes", "m=64,n=64,k=64,block=3"}, 2, "--shapes: nf4_gemm_bwd: nf4 layout: block size 3 is not a positive even number", false},
	{[]string{"check", "--kernel", "nf4_dequant", "--shapes", "n=64,k=64,scales=f16"}, 2, "scales=f16: want one of f32, dq", false},
	{[]string{"check", "--kernel", "lp_pool1d_bwd", "--shapes", "n=1,c=1,l=8,window=2,p=0"}, 2, "--shapes: lp_pool1d_bwd p=0 is not positive", false},
	{[]string{"check", "--kernel", "lp_pool1d_bwd", "--shapes", "n=1,c=1,l=8,window=2,p=2.5", "--dtype", "f64"}, 2, "lp_pool1d_bwd: f64 needs an integer p, not 2.5 (PTX has no f64 lg2/ex2)", false},
	{[]string{"check", "--kernel", "lp_pool1d_bwd", "--shapes", "n=1,c=1,l=8,window=2,p=2,ceil=2"}, 2, "ceil=2: want 0 (floor mode, the default) or 1 (ceil_mode)", false},
	// No output replaces a database, even with --force.
	{[]string{"export", "--db", "{db}", "--format", "json", "-o", "{db}", "--force"}, 2, "{db} is the --db database: no output replaces a database, even with --force", false},
	{[]string{"export", "--db", "{db}", "--format", "c", "-o", "{dropped}", "--force"}, 2, "{dropped} is an SQLite database: no output replaces a database, even with --force", false},
	{[]string{"report", "--db", "{db}", "-o", "{db}", "--force"}, 2, "{db}: cannot receive an output file: it is an SQLite database, want a directory for the report (--force does not change that)", false},
	{[]string{"report", "--db", "{db}", "-o", "{notes}", "--force"}, 2, "{notes}: cannot receive an output file: it is a file, want a directory for the report (--force does not change that)", false},
	// Bounds and duplicates.
	{[]string{"replay", "--db", "{db}", "--seeds", "100000000"}, 2, "--seeds must be 1 to 1000, got 100000000", false},
	{[]string{"replay", "--db", "{db},{db}"}, 2, "--db: {dir}/tune.db is given twice: give each file once", false},
	{[]string{"bench", "--configs", "{table},{table}", "--db", "{dir}/n.db"}, 2, "--configs: ../../configs/h200/pool.json is given twice: give each file once", false},
	{[]string{"bench", "--configs", "{table},../../configs/h200/../h200/pool.json", "--db", "{dir}/n.db"}, 2, "--configs: ../../configs/h200/pool.json and ../../configs/h200/../h200/pool.json are the same file: give each file once", false},
	{[]string{"bench", "--configs", "{table},", "--db", "{dir}/n.db"}, 2, `--configs "../../configs/h200/pool.json,": an empty path between commas (want TABLE.json[,TABLE.json...])`, false},
	{[]string{"bench", "--configs", "{table}", "--db", "{dir}/n.db", "--warm-ms", "-5"}, 2, "--warm-ms -5: want 0 or more", false},
	{[]string{"bench", "--configs", "{table}", "--db", "{dir}/n.db", "--ref-cache", "{table}/refs"}, 2, "--ref-cache ../../configs/h200/pool.json/refs: reference cache: mkdir ../../configs/h200/pool.json: not a directory", false},
	{[]string{"regress", "--baseline", "{db}", "--db", "{db}"}, 2, "a run compared with itself: {dir}/tune.db run 1 and {dir}/tune.db run 1 are run 1", false},
	{[]string{"--version", "--kernel", "relu_bwd"}, 2, "--version stands alone", false},
	// merge: its inputs, and an output that is an input or no gradtune database.
	{[]string{"merge", "-o", "{dir}/all.db"}, 2, "merge needs the databases to merge: tune merge -o OUT.db IN.db [IN.db...]", false},
	{[]string{"merge", "--db", "{db}"}, 2, "merge needs -o OUT.db (the merged database)", false},
	{[]string{"--shard", "0/4", "--db", "{dir}/s.db"}, 2, `--shard "0/4": want 1 ≤ i ≤ n`, false},
	{[]string{"--shard", "2", "--db", "{dir}/s.db"}, 2, `--shard "2": want i/n, e.g. 2/4 (part i of n, counted from 1)`, false},
	{[]string{"--devices", "0,0", "--db", "{dir}/s.db"}, 2, `--devices "0,0": want all, or distinct GPU ordinals such as 0,1`, false},
	{[]string{"--devices", "0,1", "--device", "1", "--db", "{dir}/s.db"}, 2, "--device and --devices both name GPUs: give one", false},
	{[]string{"merge", "-o", "{dir}/all.db", "{db}", "{dir}/./tune.db"}, 2, "inputs: {dir}/tune.db and {dir}/./tune.db are the same file: give each file once", false},
	{[]string{"merge", "-o", "{dir}/all.db", "{dir}/a,b.db"}, 2, `merge: "{dir}/a,b.db": an input's name has a comma; rename it`, false},
	{[]string{"merge", "--db", "{db}", "-o", "{dir}/all.db", "--force"}, 2, "--force does not apply to tune merge: merge replaces no file", false},
	{[]string{"merge", "--db", "{db},{dir}/./tune.db", "-o", "{dir}/all.db"}, 2, "inputs: {dir}/tune.db and {dir}/./tune.db are the same file: give each file once", false},
	{[]string{"merge", "--db", "{act},{db}", "-o", "{db}"}, 2, "-o: {dir}/tune.db is the input {dir}/tune.db: cannot receive the merge; name a new file", false},
	{[]string{"merge", "--db", "{db}", "-o", "{dir}/./tune.db"}, 2, "-o: {dir}/./tune.db is the input {dir}/tune.db: cannot receive the merge", false},
	{[]string{"merge", "--db", "{db}", "-o", "{notes}"}, 2, "-o: store: open {dir}/notes.txt: not a gradtune database (the file is not an SQLite database; left unchanged); it cannot receive the merge", false},
	{[]string{"merge", "--db", "{db}", "-o", "{dir}"}, 2, "-o: store: open {dir}: not a gradtune database: it is a directory", false},
	{[]string{"merge", "--db", "{db}", "-o", "{trunc}"}, 2, "-o: store {dir}/trunc.db: read schema version: damaged gradtune database", false},
	{[]string{"merge", "--db", "{db}", "-o", "{dir}/missing/all.db"}, 2, "-o: store: open {dir}/missing/all.db: directory {dir}/missing", false},
	{[]string{"merge", "--db", "{db}", "-o", "{dir}/{long}"}, 2, "-o {dir}/{long}: cannot create a file in {dir}: file name too long", false},
	{[]string{"merge", "--db", "{db},{trunc}", "-o", "{dir}/all.db"}, 2, "input: store {dir}/trunc.db: read schema version: damaged gradtune database: database disk image is malformed", false},
	{[]string{"merge", "--db", "{dropped},{db}", "-o", "{dir}/all.db"}, 2, "input: store {dir}/dropped.db: check the schema: damaged gradtune database: table winners is missing", false},
	{[]string{"merge", "--db", "{db},{dir}/missing.db", "-o", "{dir}/all.db"}, 2, "input: store: open {dir}/missing.db: no database file", false},
	{[]string{"merge", "--db", "{notes}", "-o", "{dir}/all.db"}, 2, "input: store: open {dir}/notes.txt: not a gradtune database", false},
}

// saidTwice is the first part of msg's first line that the next part
// repeats ("nf4_gemm_bwd: nf4_gemm_bwd shape: ..."), or "".
func saidTwice(msg string) string {
	line, _, _ := strings.Cut(msg, "\n")
	parts := strings.Split(line, ": ")
	for i := 1; i+1 < len(parts); i++ {
		a, b := parts[i], parts[i+1]
		if b == a || strings.HasPrefix(b, a+" ") {
			return a
		}
	}
	return ""
}

func TestBadInputs(t *testing.T) {
	_, driverErr := cuda.Open()
	tmpl := badInputTemplate(t)
	for _, c := range badInputs {
		name := strings.Join(c.args, " ")
		t.Run(name, func(t *testing.T) {
			if c.needsNoGPU && driverErr == nil {
				t.Skip("an NVIDIA driver is present; this case fails for want of one")
			}
			files := badInputFiles(t, tmpl)
			args := make([]string, len(c.args))
			for i, a := range c.args {
				for k, v := range files {
					a = strings.ReplaceAll(a, k, v)
				}
				args[i] = a
			}
			want := c.want
			for k, v := range files {
				want = strings.ReplaceAll(want, k, v)
			}
			before := snapshot(t, files["{dir}"])
			code, out, errs := runTune(t, args...)
			if code != c.code || !strings.Contains(errs, want) {
				t.Errorf("exit %d, stderr %q\nwant exit %d and %q", code, errs, c.code, want)
			}
			if c.code == 2 && (out != "" || !strings.Contains(errs, "Run 'tune help' for usage.")) {
				t.Errorf("usage error with stdout %q, stderr %q", out, errs)
			}
			if r := saidTwice(errs); r != "" {
				t.Errorf("%q says %q twice in a row", errs, r)
			}
			for _, tmp := range []string{"/." + files["{long}"], files["{long}"] + ".tmp", "gradtune-replay-", ".gradtune-probe-"} {
				if strings.Contains(errs, tmp) {
					t.Errorf("%q names a temporary file (%s...)", errs, tmp)
				}
			}
			after := snapshot(t, files["{dir}"])
			if len(after) != len(before) {
				t.Errorf("files before %d, after %d", len(before), len(after))
			}
			for n, h := range before {
				if after[n] != h {
					t.Errorf("%s changed", n)
				}
			}
		})
	}
	if len(badInputs) < 40 {
		t.Errorf("%d cases in the matrix, want at least 40", len(badInputs))
	}
}
