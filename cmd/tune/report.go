package main

import "io"

func cmdReport(args []string, stdout io.Writer) error { return usagef("report: not yet") }
