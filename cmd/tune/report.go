package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/step"
	"github.com/gradtune/gradtune/reports"
	"github.com/gradtune/gradtune/variants"
)

func reportCommand() *command {
	return &command{
		name:  "report",
		usage: "report [--db FILE] [--run ID] [--kernel K] [--shapes S] [--peers FILE.jsonl] [--step MODEL [--step-tokens N]] [--force] -o DIR",
		summary: "charts (SVG and PNG under DIR/img), DIR/index.html (self-contained, reads\n" +
			"offline) and DIR/report.md (for pull requests): every valid variant's median\n" +
			"and CI per shape, time by each axis, a roofline, best so far, failures by kind;\n" +
			"with --step, the model's QLoRA backward step: tuned time × launches per kernel,\n" +
			"stacked, beside the peers'",
		flags: func(fs *flagSet) {
			resultFlags(fs)
			fs.String("o", "", "DIR\tthe report directory")
			fs.String("peers", "", "FILE\tJSON lines of bench/peers*.py, shown beside our results")
			fs.String("step", "", "MODEL\ta preset (qwen1.5b) or a model's config.json: weigh the winners by the launches of its QLoRA backward step (bf16)")
			fs.Int("step-tokens", variants.DefaultTokens, "N\tthe step's tokens")
			fs.Bool("force", false, "\twrite into a directory that already holds files")
		},
		run: cmdReport,
	}
}

func cmdReport(fs *flagSet, stdout, stderr io.Writer) error {
	out := fs.str("o")
	if out == "" {
		return usagef("report needs -o DIR (the report directory)")
	}
	sel, err := resultOptions(fs)
	if err != nil {
		return err
	}
	if err := reports.CheckDir(out, fs.Given("force")); err != nil {
		return outputError(err)
	}
	opt := reports.Options{Force: fs.Given("force"), Keep: protectDB(fs)}
	path := fs.str("peers")
	if path != "" {
		if opt.Peers, err = readPeers(path); err != nil {
			return err
		}
	}
	if opt.Step, err = stepInput(fs); err != nil {
		return err
	}
	dir := out // the report's directory, or the one it will be made in
	if _, err := os.Stat(out); err != nil {
		dir = filepath.Dir(filepath.Clean(out))
	}
	if err := probeWrite("-o", out, dir, ".gradtune-probe-*"); err != nil {
		return err
	}
	set, err := loadSelection(fs.str("db"), sel)
	if err != nil {
		return err
	}
	if path != "" && opt.Peers.Matching(set) == 0 {
		fmt.Fprintf(stderr, "tune report: --peers %s: none of its %d rows is a shape of the report (its kernels: %s); the report has no peers\n",
			path, opt.Peers.Len(), strings.Join(opt.Peers.Kernels(), ", "))
	}
	files, err := reports.Write(set, out, opt)
	if err != nil {
		return outputError(err)
	}
	fmt.Fprintf(stdout, "%d files in %s; open %s\n", len(files), out, filepath.Join(out, "index.html"))
	return nil
}

// readPeers reads a peers file; a missing, malformed or empty one is a
// usage error.
func readPeers(path string) (*reports.Peers, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("--peers: %w", err)
	}
	defer f.Close()
	p, err := reports.ReadPeers(f)
	if err != nil {
		return nil, usagef("--peers %s: %w", path, err)
	}
	return p, nil
}

// stepInput is the model step --step asks for, nil without it.
func stepInput(fs *flagSet) (*reports.StepInput, error) {
	model, tokens := fs.str("step"), fs.integer("step-tokens")
	if model == "" {
		if fs.Given("step-tokens") {
			return nil, usagef("--step-tokens sets the tokens of --step's model; give --step too")
		}
		return nil, nil
	}
	if tokens <= 0 {
		return nil, usagef("--step-tokens %d: want a positive token count", tokens)
	}
	var p variants.Preset
	var err error
	if _, statErr := os.Stat(model); !variants.IsPreset(model) && statErr != nil {
		return nil, usagef("--step %q: neither a preset (%s) nor a model's config.json (%w)", model, strings.Join(variants.PresetNames(), ", "), statErr)
	}
	if variants.IsPreset(model) {
		p, err = variants.LookupPreset(model, tokens)
	} else if p, err = variants.ReadConfig(model); err == nil {
		p.Tokens = tokens
	}
	if err != nil {
		return nil, usagef("--step %w", err)
	}
	return &reports.StepInput{Model: fmt.Sprintf("%s at %d tokens", filepath.Base(model), tokens),
		Shapes: step.Resolve(step.Backward(p), dtype.BF16)}, nil
}
