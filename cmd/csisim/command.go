package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// command is one subcommand of csisim: its line in `csisim help`, its
// section of docs/cli.md, its flags and how it runs. Every subcommand is
// an entry of the table (commands.go), and everything the subcommands
// have in common — parsing the flags, --help, checking the number of
// arguments, Ctrl-C, printing an error and choosing the exit code — is
// done here, once.
type command struct {
	name    string
	summary string   // one line, for `csisim help` and docs/cli.md
	usage   []string // the command lines it takes, e.g. "csisim run [flags] SCENARIO.yaml"
	about   string   // what --help says between the usage and the flags; may be ""
	// prefix begins its messages: "csisim" or "csisim test" (default
	// "csisim").
	prefix string
	// minArgs and maxArgs bound the arguments after the flags (maxArgs
	// -1: any number); outside them the usage is printed, exit 2.
	minArgs, maxArgs int
	// flagsAnywhere lets flags come after the arguments too, as kubectl
	// allows (csisim explain pvc data -n ns).
	flagsAnywhere bool
	// signals: SIGINT and SIGTERM end Run's context, and the command
	// tears down what it made; without it they end csisim at once.
	signals bool
	// hidden commands are run by csisim itself (test-scenario, cni): they
	// are not in `csisim help` or docs/cli.md.
	hidden bool
	// rawArgs: the subcommand reads its command line itself (csisim
	// driver, whose flags are the driver's); its help is what it prints
	// for --help.
	rawArgs bool
	// new returns the subcommand, ready for its flags.
	new func() subcommand
}

// subcommand is what a command runs. Its flags are fields of its own,
// set on the FlagSet by flags; Run runs it once they are parsed, with the
// arguments and output streams in the invocation it embeds.
//
// A new flag is one line in the subcommand's flags method, e.g.
//
//	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "give up after this long")
//
// and a field for it; --help and docs/cli.md pick it up (regenerate the
// latter with `go generate ./cmd/csisim`).
type subcommand interface {
	flags(fs *flag.FlagSet)
	Run(ctx context.Context) error
	invoked() *invocation
}

// invocation is what a subcommand runs with besides its flags.
type invocation struct {
	args   []string // the arguments after the flags
	fs     *flag.FlagSet
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func (in *invocation) invoked() *invocation { return in }

// The exit codes of csisim, by what happened.
const (
	exitOK          = 0
	exitFailure     = 1   // the run failed, or could not be carried out
	exitUsage       = 2   // the command line (or the scenario file it names) is wrong
	exitInterrupted = 130 // Ctrl-C or SIGTERM, as a shell reports SIGINT
)

// exitError is an error that says how csisim ends. Any other error a
// subcommand returns is a failure, printed as "PREFIX: error", exit 1.
type exitError struct {
	code int
	// err is printed as "PREFIX: err"; nil when the subcommand has said
	// what went wrong itself.
	err error
	// showUsage prints the command's usage after err.
	showUsage bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

var (
	// errFailed: the subcommand has printed why it failed; exit 1.
	errFailed error = &exitError{code: exitFailure}
	// errInterrupted: interrupted, and the subcommand has said what it
	// tore down; exit 130.
	errInterrupted error = &exitError{code: exitInterrupted}
	// errShowUsage: wrong arguments; the usage is printed, exit 2.
	errShowUsage error = &exitError{code: exitUsage, showUsage: true}
)

// usageError is a mistake in the command line (or in the scenario it
// names): printed, exit 2.
func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

// usagef is a usageError made like fmt.Errorf.
func usagef(format string, a ...any) error { return usageError(fmt.Errorf(format, a...)) }

// exitStatus turns the exit code of a part that reports its own outcome
// (csisim's driver, a run that printed how it went) into the error that
// ends csisim with that code.
func exitStatus(code int) error {
	switch code {
	case exitOK:
		return nil
	case exitFailure:
		return errFailed
	case exitInterrupted:
		return errInterrupted
	}
	return &exitError{code: code}
}

// main runs the command with args (what follows its name) and returns
// csisim's exit code.
func (c *command) main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	sub := c.new()
	fs := c.flagSet(sub, stderr)
	in := sub.invoked()
	*in = invocation{fs: fs, stdin: stdin, stdout: stdout, stderr: stderr}
	var err error
	if c.rawArgs {
		in.args = args
	} else if in.args, err = c.parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.writeHelp(stdout, fs)
			return exitOK
		}
		// The flag package has said what is wrong.
		c.writeHelp(stderr, fs)
		return exitUsage
	}
	if len(in.args) < c.minArgs || (c.maxArgs >= 0 && len(in.args) > c.maxArgs) {
		c.writeHelp(stderr, fs)
		return exitUsage
	}
	ctx := context.Background()
	if c.signals {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	return c.exitCode(sub.Run(ctx), fs, stderr)
}

// flagSet is the FlagSet of sub: its flags, its errors on stderr, and
// no usage of its own (main prints the help, on stdout when asked for).
func (c *command) flagSet(sub subcommand, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("csisim "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	sub.flags(fs)
	return fs
}

// parse parses the flags and returns the arguments; with flagsAnywhere,
// flags may also follow arguments.
func (c *command) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	if !c.flagsAnywhere {
		err := fs.Parse(args)
		return fs.Args(), err
	}
	var positional []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
}

// exitCode prints what err says and returns the exit code of its kind.
func (c *command) exitCode(err error, fs *flag.FlagSet, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var e *exitError
	if !errors.As(err, &e) {
		fmt.Fprintf(stderr, "%s: %v\n", c.messagePrefix(), err)
		return exitFailure
	}
	if e.err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.messagePrefix(), e.err)
	}
	if e.showUsage {
		c.writeHelp(stderr, fs)
	}
	return e.code
}

func (c *command) messagePrefix() string {
	if c.prefix == "" {
		return "csisim"
	}
	return c.prefix
}

// writeHelp writes what --help shows: the usage lines, what the command
// does, and its flags.
func (c *command) writeHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n", strings.Join(c.usage, "\n       "))
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.about, "\n"))
	}
	if hasFlags(fs) {
		fmt.Fprint(w, "\nFlags:\n")
		out := fs.Output()
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}
