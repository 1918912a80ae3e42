// Command fidelity-table writes the table of csisim diff's reports (make
// fidelity-report): each scenario's two runs, its differences in behaviour
// (the API bookkeeping counted apart) and in timing, into the generated
// section of docs/fidelity.md, with the day and commit it was measured at.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/csisim/csisim/diff"
	itext "github.com/csisim/csisim/internal/text"
)

// The measured table sits between these lines of the document.
const (
	begin = "<!-- fidelity table: written by make fidelity-report; do not edit -->"
	end   = "<!-- end of fidelity table -->"
)

func main() {
	doc := flag.String("doc", "docs/fidelity.md", "the document whose fidelity table is rewritten")
	measured := flag.String("measured", "", "when and at which commit the reports were made, said above the table")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: fidelity-table [--doc FILE] [--measured TEXT] REPORT.json...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*doc, *measured, flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "fidelity-table: %v\n", err)
		os.Exit(1)
	}
}

func run(doc, measured string, files []string) error {
	var reports []*diff.Report
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r diff.Report
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: not a csisim diff --json report (a run that could not start writes none): %w", f, err)
		}
		reports = append(reports, &r)
	}
	var table strings.Builder
	if measured != "" {
		fmt.Fprintf(&table, "Measured %s.\n\n", measured)
	}
	if err := diff.WriteTable(&table, reports); err != nil {
		return err
	}
	fmt.Print(table.String())
	text, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	out, err := itext.ReplaceSection(string(text), begin, end, table.String())
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	return os.WriteFile(doc, []byte(out), 0o644)
}
