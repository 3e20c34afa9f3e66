package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

func main() {
	stop := startProfile(os.Getenv("GRADTUNE_CPUPROFILE"))
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// startProfile writes a CPU profile of this process to prefix.PID when
// prefix is set (the parent, its worker and its compile helpers each
// write their own), and returns the function that ends it.
func startProfile(prefix string) (stop func()) {
	if prefix == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", prefix, os.Getpid()))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tune: GRADTUNE_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
