package main

import (
	"fmt"
	"os"

	"github.com/gradtune/gradtune/runner"
)

// refCacheFlag declares --ref-cache, what defaults adds saying what a
// command does without it.
func refCacheFlag(fs *flagSet, defaults string) {
	fs.String("ref-cache", "", "DIR\tkeep the float64 references in DIR and read them there in later runs of this same binary "+defaults)
}

// refCacheOf opens the reference cache --ref-cache names and returns its
// folder for the workers (runner.RefCache.Dir); without the flag, a
// temporary one when temporary is set, holding one shape's references
// at a time (runner.RefCache.KeepLastShape; removed by the returned
// done), else none (""). A reference cache only saves the host's time: the
// references read are the ones this binary computed.
func refCacheOf(fs *flagSet, temporary bool) (dir string, done func(), err error) {
	path := fs.str("ref-cache")
	if path != "" {
		c, err := runner.OpenRefCache(path)
		if err != nil {
			return "", func() {}, usagef("--ref-cache %s: %w", path, err)
		}
		return c.Dir(), func() {}, nil
	}
	if !temporary {
		return "", func() {}, nil
	}
	if path, err = os.MkdirTemp("", "gradtune-refs-"); err != nil {
		return "", func() {}, fmt.Errorf("a temporary reference cache: %w", err)
	}
	done = func() { os.RemoveAll(path) }
	c, err := runner.OpenRefCache(path)
	if err == nil {
		err = c.KeepLastShape()
	}
	if err != nil {
		done()
		return "", func() {}, fmt.Errorf("a temporary reference cache: %w", err)
	}
	return c.Dir(), done, nil
}
