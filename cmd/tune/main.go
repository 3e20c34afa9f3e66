package main

import "os"

func main() { os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr)) }
