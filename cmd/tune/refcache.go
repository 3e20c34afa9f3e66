package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gradtune/gradtune/runner"
)

// refCacheFlag declares --ref-cache, what defaults adds saying what a
// command does without it.
func refCacheFlag(fs *flagSet, defaults string) {
	fs.String("ref-cache", "", "DIR\tkeep the float64 references in DIR and read them there in later runs of this same binary "+defaults)
}

// refCaches opens the reference caches of a command's workers on the
// GPUs devs and returns each GPU's folder (runner.RefCache.Dir): the
// cache --ref-cache names, shared by all; without the flag, when
// temporary is set, a temporary folder per GPU, each holding the
// references of the shape its worker prepared last
// (runner.RefCache.KeepLastShape), all removed by the returned done;
// else none (no entry). A reference cache only saves the host's time:
// the references read are the ones this binary computed.
func refCaches(fs *flagSet, devs []int, temporary bool) (dirs map[int]string, done func(), err error) {
	dirs, done = map[int]string{}, func() {}
	if path := fs.str("ref-cache"); path != "" {
		c, err := runner.OpenRefCache(path)
		if err != nil {
			return nil, done, usagef("--ref-cache %s: %w", path, err)
		}
		for _, d := range devs {
			dirs[d] = c.Dir()
		}
		return dirs, done, nil
	}
	if !temporary {
		return dirs, done, nil
	}
	tmp, err := os.MkdirTemp("", "gradtune-refs-")
	if err != nil {
		return nil, done, fmt.Errorf("a temporary reference cache: %w", err)
	}
	done = func() { os.RemoveAll(tmp) }
	for _, d := range devs {
		c, err := runner.OpenRefCache(filepath.Join(tmp, fmt.Sprintf("gpu%d", d)))
		if err == nil {
			err = c.KeepLastShape()
		}
		if err != nil {
			done()
			return nil, func() {}, fmt.Errorf("a temporary reference cache: %w", err)
		}
		dirs[d] = c.Dir()
	}
	return dirs, done, nil
}
