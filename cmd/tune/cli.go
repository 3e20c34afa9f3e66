package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
)

// version is this build's module version and VCS revision, printed by
// tune --version and recorded with every run.
var version = buildVersion()

// buildVersion reads the version from the build information the Go
// toolchain embeds: the main module's version (a pseudo-version such as
// v0.0.0-20261202153407-a03e1e0ffdc4 when built in a git checkout,
// "(devel)" otherwise) and the vcs.revision, vcs.time and vcs.modified
// settings (absent with -buildvcs=false).
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	rev := settings["vcs.revision"]
	if rev == "" {
		return bi.Main.Version + ", no VCS revision (built outside a git checkout or with -buildvcs=false)"
	}
	if settings["vcs.modified"] == "true" {
		rev += " with uncommitted changes"
	}
	return fmt.Sprintf("%s, revision %s of %s", bi.Main.Version, rev, settings["vcs.time"])
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// usageError marks errors that exit 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// errHelp asks for a command's help on stdout.
var errHelp = errors.New("help requested")

// command is one subcommand: its usage line, what it does, its flags and
// its body.
type command struct {
	name     string
	usage    string // after "tune "
	summary  string // what it does, a few lines
	flags    func(fs *flagSet)
	run      func(fs *flagSet, stdout, stderr io.Writer) error
	misplace map[string]string // flags of other commands, and why they do not apply here
	// operands names the arguments that are not flags, for a command
	// that takes some ("IN.db..."); "" for one that takes none.
	operands string
	hidden   bool
	// hiddenFlags are accepted but left out of the help: test and
	// diagnosis switches (planted faults, replay) that normal runs never use.
	hiddenFlags map[string]bool
}

// commands is every subcommand by name; "" is tune itself.
var commands map[string]*command

func init() {
	commands = map[string]*command{}
	for _, c := range []*command{tuneCommand(), listCommand(), emitCommand(), checkCommand(),
		crosscheckCommand(), devicesCommand(), showCommand(), reportCommand(), exportCommand(), workerCommand(),
		benchCommand(), regressCommand(), runsCommand(), replayCommand(), compileCommand(), mergeCommand()} {
		commands[c.name] = c
	}
}

// run is the command line: it never panics (a panic is an internal error,
// exit 1, with the stack) and returns the exit code.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "tune: internal error: %v\n%s", r, debug.Stack())
			code = exitFail
		}
	}()
	err := dispatch(args, stdout, stderr)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "tune: %v\nRun 'tune help' for usage.\n", err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "tune: %v\n", err)
		return exitFail
	}
}

// dispatch picks the command and runs it.
func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		if len(args) > 1 {
			return usagef("--version stands alone (tune --version), got %q after it", strings.Join(args[1:], " "))
		}
		fmt.Fprintf(stdout, "tune %s, %s %s/%s\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	}
	name := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if name == "help" {
		return help(args, stdout)
	}
	if name == "tune" {
		name = ""
	}
	c, ok := commands[name]
	if !ok {
		return usagef("unknown command %q (commands: %s)", name, strings.Join(commandNames(), ", "))
	}
	fs, err := c.parse(args)
	if errors.Is(err, errHelp) {
		if name == "" {
			fmt.Fprint(stdout, overview())
		} else {
			fmt.Fprint(stdout, c.help())
		}
		return nil
	}
	if err != nil {
		return err
	}
	return c.run(fs, stdout, stderr)
}

// help prints the overview, or one command's help.
func help(args []string, stdout io.Writer) error {
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, overview())
		return nil
	case len(args) > 1:
		return usagef("help takes one topic, got %q (topics: %s)", strings.Join(args, " "), strings.Join(commandNames(), ", "))
	}
	name := args[0]
	if name == "tune" {
		name = ""
	}
	c, ok := commands[name]
	if !ok || c.hidden {
		return usagef("no help topic %q (topics: %s)", args[0], strings.Join(commandNames(), ", "))
	}
	fmt.Fprint(stdout, c.help())
	return nil
}

// commandNames lists the visible commands, tune first.
func commandNames() []string {
	names := []string{"tune"}
	for n, c := range commands {
		if n != "" && !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names[1:])
	return append(names, "help")
}

// overview is tune's help: every command, then tune's own flags.
func overview() string {
	var b strings.Builder
	b.WriteString("tune tunes GPU backward kernels.\n\n")
	for _, n := range commandNames() {
		name := n
		if n == "tune" {
			name = ""
		}
		c, ok := commands[name]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "  tune %s\n", c.usage)
		for _, l := range strings.Split(c.summary, "\n") {
			fmt.Fprintf(&b, "      %s\n", l)
		}
	}
	b.WriteString("  tune help [COMMAND]\n      this text, or a command's flags\n")
	b.WriteString("  tune --version\n      the module version and VCS revision of this build (recorded with every run)\n\n")
	b.WriteString(commands[""].flagHelp())
	b.WriteString("\nExit codes: 0 success, 1 failure, 2 usage error.\n")
	return b.String()
}

// help is one command's usage, summary and flags.
func (c *command) help() string {
	return fmt.Sprintf("usage: tune %s\n\n%s\n\n%s", c.usage, c.summary, c.flagHelp())
}
