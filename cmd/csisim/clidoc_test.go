package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cliDoc is docs/cli.md, from the repository's root.
var cliDoc = filepath.Join("..", "..", "docs", "cli.md")

var updateCLIDoc = flag.Bool("update", false, "rewrite docs/cli.md from the command table (go generate ./cmd/csisim)")

// TestCLIDoc: docs/cli.md is what the command table says, each command's
// help as --help prints it. `go generate ./cmd/csisim` rewrites it.
func TestCLIDoc(t *testing.T) {
	var want bytes.Buffer
	writeCLIDoc(&want)
	if *updateCLIDoc {
		if err := os.WriteFile(cliDoc, want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatalf("%v; write it with\n\tgo generate ./cmd/csisim", err)
	}
	if !bytes.Equal(have, want.Bytes()) {
		line, ours, table := firstDifferentLine(string(have), want.String())
		t.Fatalf("docs/cli.md is stale: it differs from the command table from line %d on:\n  docs/cli.md: %q\n  the table:   %q\n"+
			"regenerate it with\n\tgo generate ./cmd/csisim", line, ours, table)
	}
}

// writeCLIDoc writes docs/cli.md: a line per command, then each
// command's summary and help.
func writeCLIDoc(w io.Writer) {
	fmt.Fprint(w, "# csisim commands\n\n"+
		"<!-- Generated from the command table of cmd/csisim by `go generate ./cmd/csisim`: do not edit. -->\n\n"+
		"Every command and its flags, as `csisim COMMAND --help` prints them. Exit codes: 0 success,\n"+
		"1 failure, 2 a usage error (or a malformed scenario), 130 interrupted (but csisim serve, which\n"+
		"Ctrl-C stops, exits 0).\n\n")
	for _, c := range commands() {
		if !c.hidden {
			fmt.Fprintf(w, "- [`csisim %s`](#csisim-%s): %s\n", c.name, c.name, c.summary)
		}
	}
	for _, c := range commands() {
		if c.hidden {
			continue
		}
		fmt.Fprintf(w, "\n## csisim %s\n\n%s.\n\n```text\n%s```\n", c.name, capitalize(c.summary), helpText(c))
	}
}

// helpText is what `csisim NAME --help` prints.
func helpText(c *command) string {
	var help bytes.Buffer
	if code := c.main([]string{"--help"}, nil, &help, io.Discard); code != exitOK {
		panic(fmt.Sprintf("csisim %s --help: exit %d", c.name, code))
	}
	return help.String()
}

func capitalize(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// firstDifferentLine is the number and the text, in a and in b, of the
// first line where they differ.
func firstDifferentLine(a, b string) (int, string, string) {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; ; i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y || i >= len(la) || i >= len(lb) {
			return i + 1, x, y
		}
	}
}
