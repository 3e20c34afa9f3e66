package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// flagSet is a command's flags: Go's flag.FlagSet as the registry, parsed
// by parse below so that every error names what is accepted, and a flag
// given twice is an error instead of the last one winning.
type flagSet struct {
	*flag.FlagSet
	cmd   *command
	given map[string]bool
	raw   []string // the arguments parsed
	args  []string // the arguments that are not flags (a command with operands)
}

// Given reports whether the flag called name was on the command line.
func (fs *flagSet) Given(name string) bool { return fs.given[name] }

// str, integer, integer64, unsigned and float read the parsed value of the
// flag called name; each panics when the command defines no such flag of
// that type (a bug of the command, not of its input).
func (fs *flagSet) str(name string) string      { return fs.value(name).(string) }
func (fs *flagSet) integer(name string) int     { return fs.value(name).(int) }
func (fs *flagSet) integer64(name string) int64 { return fs.value(name).(int64) }
func (fs *flagSet) unsigned(name string) uint64 { return fs.value(name).(uint64) }
func (fs *flagSet) float(name string) float64   { return fs.value(name).(float64) }

func (fs *flagSet) value(name string) any {
	f := fs.Lookup(name)
	if f == nil {
		panic(fmt.Sprintf("%s has no flag --%s", fs.cmd.title(), name))
	}
	return f.Value.(flag.Getter).Get()
}

// newFlagSet defines c's flags. Each flag's usage string is
// "PLACEHOLDER\tdescription".
func (c *command) newFlagSet() *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(c.name, flag.ContinueOnError), cmd: c, given: map[string]bool{}}
	fs.SetOutput(io.Discard)
	if c.flags != nil {
		c.flags(fs)
	}
	return fs
}

// parse reads args: --name value, --name=value, -name as well, a bare
// --bool; -h and --help ask for help (errHelp).
func (c *command) parse(args []string) (*flagSet, error) {
	fs := c.newFlagSet()
	fs.raw = args
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return nil, usagef("unexpected argument %q", args[i+1])
			}
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if c.operands == "" {
				return nil, usagef("unexpected argument %q (%s)", a, c.flagList())
			}
			fs.args = append(fs.args, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if name == "h" || name == "help" {
			return nil, errHelp
		}
		f := fs.Lookup(name)
		if f == nil {
			return nil, c.unknownFlag(name)
		}
		if fs.given[name] {
			return nil, usagef("--%s given twice: give it once", name)
		}
		fs.given[name] = true
		if !hasVal {
			if isBool(f) {
				val = "true"
			} else if i+1 < len(args) {
				i++
				val = args[i]
			} else {
				return nil, usagef("--%s needs a value: --%s %s", name, name, placeholder(f))
			}
		}
		if err := f.Value.Set(val); err != nil {
			return nil, usagef("--%s %q: want %s (--%s %s: %s)", name, val, kind(f), name, placeholder(f), description(f))
		}
	}
	return fs, nil
}

// unknownFlag explains a flag this command does not have.
func (c *command) unknownFlag(name string) error {
	if why, ok := c.misplace[name]; ok {
		return usagef("--%s does not apply to %s: %s", name, c.title(), why)
	}
	return usagef("unknown flag --%s (%s)", name, c.flagList())
}

// title is "tune" or "tune NAME".
func (c *command) title() string { return strings.TrimSpace("tune " + c.name) }

// flagList names the command's flags.
func (c *command) flagList() string {
	var names []string
	c.newFlagSet().VisitAll(func(f *flag.Flag) {
		if !c.hiddenFlags[f.Name] {
			names = append(names, "--"+f.Name)
		}
	})
	if len(names) == 0 {
		return c.title() + " takes no flags"
	}
	return "flags of " + c.title() + ": " + strings.Join(names, ", ")
}

// flagHelp is the command's flags, one a line, sorted by name.
func (c *command) flagHelp() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Flags of %s:\n", c.title())
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	n := 0
	c.newFlagSet().VisitAll(func(f *flag.Flag) {
		if c.hiddenFlags[f.Name] {
			return
		}
		n++
		desc := description(f)
		if f.DefValue != "" && f.DefValue != "false" && !strings.Contains(desc, "default") {
			desc += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace("--"+f.Name+" "+placeholder(f)), desc)
	})
	tw.Flush()
	if n == 0 {
		b.WriteString("  none\n")
	}
	return b.String()
}

func isBool(f *flag.Flag) bool {
	bf, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}

// placeholder and description split a flag's usage string.
func placeholder(f *flag.Flag) string {
	p, _, _ := strings.Cut(f.Usage, "\t")
	return p
}

func description(f *flag.Flag) string {
	_, d, _ := strings.Cut(f.Usage, "\t")
	return d
}

// kind names the values a flag accepts.
func kind(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "a value"
	}
	switch g.Get().(type) {
	case int:
		return "an integer"
	case uint64:
		return "a non-negative integer"
	case bool:
		return "true or false"
	}
	return "a value"
}
