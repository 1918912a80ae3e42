package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestCommandTable: every command has a name of its own, a summary and
// usage lines that name it; `csisim help` lists those that are not
// hidden.
func TestCommandTable(t *testing.T) {
	var help bytes.Buffer
	writeUsage(&help)
	seen := map[string]bool{}
	for _, c := range commands() {
		if seen[c.name] {
			t.Errorf("two commands are called %s", c.name)
		}
		seen[c.name] = true
		if c.summary == "" || len(c.usage) == 0 {
			t.Errorf("csisim %s has no summary or no usage", c.name)
		}
		for _, u := range c.usage {
			if !strings.HasPrefix(u, "csisim "+c.name) {
				t.Errorf("csisim %s: usage line %q does not name it", c.name, u)
			}
		}
		if listed := strings.Contains(help.String(), "  "+c.usage[0]); listed == c.hidden {
			t.Errorf("csisim %s: hidden %v, but listed in csisim help: %v", c.name, c.hidden, listed)
		}
		if lookup(c.name) == nil {
			t.Errorf("lookup(%q) finds nothing", c.name)
		}
	}
}

// TestExitCodes: how csisim ends, by the kind of error a subcommand
// returns, and what it prints.
func TestExitCodes(t *testing.T) {
	tests := []struct {
		err       error
		code      int
		stderr    string
		showUsage bool
	}{
		{nil, 0, "", false},
		{errors.New("the cluster broke"), 1, "csisim x: the cluster broke\n", false},
		{fmt.Errorf("wrapped: %w", errFailed), 1, "", false},
		{errFailed, 1, "", false},
		{usagef("--seed %q: not a number", "x"), 2, "csisim x: --seed \"x\": not a number\n", false},
		{errShowUsage, 2, "", true},
		{errInterrupted, 130, "", false},
		{exitStatus(0), 0, "", false},
		{exitStatus(1), 1, "", false},
		{exitStatus(2), 2, "", false},
		{exitStatus(130), 130, "", false},
	}
	for _, tt := range tests {
		c := &command{name: "x", prefix: "csisim x", usage: []string{"csisim x [flags]"}}
		var stderr bytes.Buffer
		fs := flag.NewFlagSet("csisim x", flag.ContinueOnError)
		if code := c.exitCode(tt.err, fs, &stderr); code != tt.code {
			t.Errorf("%v: exit code %d, want %d", tt.err, code, tt.code)
		}
		out := stderr.String()
		if usage := strings.Contains(out, "Usage: csisim x"); usage != tt.showUsage {
			t.Errorf("%v: usage printed %v, want %v", tt.err, usage, tt.showUsage)
		}
		if !tt.showUsage && out != tt.stderr {
			t.Errorf("%v: stderr %q, want %q", tt.err, out, tt.stderr)
		}
	}
}

// TestCommandLine: --help on stdout with exit 0, a wrong command line on
// stderr with the usage and exit 2, as every subcommand does it.
func TestCommandLine(t *testing.T) {
	tests := []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"scale", "--help"}, 0, "Usage: csisim scale [--claims N] [--nodes M] > scale.yaml", ""},
		{[]string{"scale", "-h"}, 0, "  -claims int", ""},
		{[]string{"scale", "--claims", "many"}, 2, "", `invalid value "many" for flag -claims`},
		{[]string{"scale", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
		{[]string{"scale", "extra"}, 2, "", "Usage: csisim scale"},
		{[]string{"scale", "--claims", "0"}, 2, "", "csisim: "},
		{[]string{"scale", "--claims", "2", "--nodes", "1"}, 0, "name: scale-2-on-1\n", ""},
		{[]string{"explain"}, 2, "", "Usage: csisim explain"},
		{[]string{"explain", "a", "b", "c"}, 2, "", "Usage: csisim explain"},
		{[]string{"test", "--parallel", "0", "--driver", "mock"}, 2, "", "csisim test: --parallel 0"},
		{[]string{"nothing"}, 2, "", `csisim: unknown command "nothing"`},
		{nil, 2, "", "Usage:"},
		{[]string{"help"}, 0, "docs/cli.md lists them all", ""},
		{[]string{"help", "scale"}, 0, "Usage: csisim scale [--claims N] [--nodes M] > scale.yaml", ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if tt.stdout != "" && !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout %q, want it to contain %q", stdout.String(), tt.stdout)
			}
			if tt.stderr != "" && !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tt.stderr)
			}
		})
	}
}

// TestFlagsAnywhere: csisim explain takes flags after the object too.
func TestFlagsAnywhere(t *testing.T) {
	c := explainCommand()
	sub := c.new()
	fs := c.flagSet(sub, io.Discard)
	args, err := c.parse(fs, []string{"pvc", "--timeout", "5s", "data", "-n", "team"})
	if err != nil {
		t.Fatal(err)
	}
	x := sub.(*explainCmd)
	if strings.Join(args, " ") != "pvc data" || x.namespace != "team" || x.timeout.String() != "5s" {
		t.Errorf("args %q, namespace %q, timeout %v", args, x.namespace, x.timeout)
	}
}
