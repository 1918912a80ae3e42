// Command csisim emulates the Kubernetes CSI volume lifecycle on one
// machine: it runs scenarios against a simulated cluster whose components
// talk to real CSI drivers over gRPC, and prints a timeline of every API
// write and CSI call.
package main

//go:generate go test -run ^TestCLIDoc$ -update .

import (
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run dispatches to the subcommand args name and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		writeUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "--help":
		if len(args) == 2 && args[0] == "help" {
			// csisim help COMMAND is csisim COMMAND --help.
			if c := lookup(args[1]); c != nil {
				return c.main([]string{"--help"}, stdin, stdout, stderr)
			}
		}
		writeUsage(stdout)
		return exitOK
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "csisim: unknown command %q\n\n", args[0])
		writeUsage(stderr)
		return exitUsage
	}
	return c.main(args[1:], stdin, stdout, stderr)
}

// commands is the table of csisim's subcommands, in the order `csisim
// help` and docs/cli.md list them.
func commands() []*command {
	return []*command{
		runCommand(), diffCommand(), serveCommand(), explainCommand(), faultCommand(), driverCommand(), registrarCommand(), livenessProbeCommand(),
		testCommand(), sanityCommand(), cleanCommand(), scaleCommand(),
		testScenarioCommand(), cniCommand(),
	}
}

// lookup finds the command of a name; nil if there is none.
func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// usageColumn is where the summaries of `csisim help` begin; a longer
// command line has its summary on the next line.
const usageColumn = 42

// writeUsage writes `csisim help`: a line per command, from the table.
func writeUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("csisim emulates the Kubernetes CSI volume lifecycle on one machine.\n\nUsage:\n")
	line := func(usage, summary string) {
		if len(usage) > usageColumn-4 {
			fmt.Fprintf(&b, "  %s\n%*s", usage, usageColumn, "")
		} else {
			fmt.Fprintf(&b, "  %-*s", usageColumn-2, usage)
		}
		b.WriteString(summary + "\n")
	}
	for _, c := range commands() {
		if !c.hidden {
			line(c.usage[0], c.summary)
		}
	}
	line("csisim help [COMMAND]", "show this help, or a command's")
	b.WriteString("\nRun 'csisim help COMMAND' for the flags of a command; docs/cli.md lists them all.\n")
	fmt.Fprint(w, b.String())
}
