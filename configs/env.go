package configs

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// checkSMs is the multiprocessor count Check resolves launches with (the
// H200's); any positive count gives the same verdicts.
const checkSMs = 132

// Launchable reports whether the entry's PTX computes shape: the same
// dims and choices, every dim but the runtime ones at its tuned value,
// the runtime ones integers within their ranges.
func (e Entry) Launchable(shape Shape) error {
	tuned, err := ParseShape(e.Shape)
	if err != nil {
		return err
	}
	if !sameNames(tuned, shape) {
		return fmt.Errorf("%s has dims %s, the table's %s has %s", shape, dimNames(shape), e.Key(), dimNames(tuned))
	}
	for n, c := range tuned.Choices {
		if shape.Choices[n] != c {
			return fmt.Errorf("%s=%s: the entry is for %s=%s", n, shape.Choices[n], n, c)
		}
	}
	for n, v := range tuned.Sizes {
		got := shape.Sizes[n]
		r, runtime := e.Runtime[n]
		switch {
		case !runtime && got != v:
			return fmt.Errorf("%s=%v: the entry's PTX computes %s=%v only", n, got, n, v)
		case runtime && (got != math.Trunc(got) || got < float64(r.Min) || got > float64(r.Max)):
			return fmt.Errorf("%s=%v: the entry computes %s from %d to %d", n, got, n, r.Min, r.Max)
		}
	}
	return nil
}

// Env is the environment the entry's launches and buffers are evaluated
// in at shape (which must be Launchable) on a device of sms
// multiprocessors: the shape's sizes by name (the integer part of a
// fractional one) and "sms".
func (e Entry) Env(shape Shape, sms int) (Env, error) {
	if err := e.Launchable(shape); err != nil {
		return nil, fmt.Errorf("configs: %s: %w", e.Key(), err)
	}
	return envOf(shape, sms), nil
}

// Plan resolves the entry's launches and buffers at shape on a device of
// sms multiprocessors.
func (e Entry) Plan(shape Shape, sms int) (Plan, error) {
	env, err := e.Env(shape, sms)
	if err != nil {
		return Plan{}, err
	}
	p, err := Resolve(e.Launches, e.Buffers, env)
	if err != nil {
		return Plan{}, fmt.Errorf("configs: %s at %s: %w", e.Key(), shape, err)
	}
	return p, nil
}

func envOf(shape Shape, sms int) Env {
	env := Env{"sms": int64(sms)}
	for n, v := range shape.Sizes {
		env[n] = int64(v)
	}
	return env
}

// checkEnvs are the environments Check resolves an entry in: its tuned
// shape, and each end of each runtime range.
func (e Entry) checkEnvs(tuned Shape) []Env {
	envs := []Env{envOf(tuned, checkSMs)}
	for n, r := range e.Runtime {
		for _, v := range []int64{r.Min, r.Max} {
			env := envOf(tuned, checkSMs)
			env[n] = v
			envs = append(envs, env)
		}
	}
	return envs
}

func envString(env Env) string {
	var parts []string
	for n, v := range env {
		parts = append(parts, fmt.Sprintf("%s=%d", n, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func sameNames(a, b Shape) bool { return dimNames(a) == dimNames(b) }

func dimNames(s Shape) string {
	var names []string
	for n := range s.Sizes {
		names = append(names, n)
	}
	for n := range s.Choices {
		names = append(names, n+"=")
	}
	slices.Sort(names)
	return "{" + strings.Join(names, ",") + "}"
}

// runtimeDims is the entry's runtime dims, sorted.
func (e Entry) runtimeDims() []string {
	var out []string
	for n := range e.Runtime {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
