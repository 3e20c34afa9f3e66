// Command tune generates, validates, measures and ranks PTX variants of
// gradtune's backward kernels on an NVIDIA GPU. See README.md for usage.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
