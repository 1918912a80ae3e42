// Command fidelity-table writes the table of csisim diff's reports (make
// fidelity-report, make fidelity-all): each scenario's two runs, its
// differences in behaviour (the API bookkeeping counted apart), in timing,
// and those its scenario file does not explain, into the generated section
// of docs/fidelity.md, with the day and commit it was measured at, and
// below it the explanations the scenario files give. A report file that
// holds no report (a diff that could not start writes none) becomes a row
// that says so. With --fail-unexplained it exits 1, after writing the
// table, when any difference is unexplained or any report is missing.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/csisim/csisim/diff"
	itext "github.com/csisim/csisim/internal/text"
)

// The measured table sits between these lines of the document.
const (
	begin = "<!-- fidelity table: written by make fidelity-report or make fidelity-all; do not edit -->"
	end   = "<!-- end of fidelity table -->"
)

func main() {
	doc := flag.String("doc", "docs/fidelity.md", "the document whose fidelity table is rewritten")
	measured := flag.String("measured", "", "when and at which commit the reports were made, said above the table")
	failUnexplained := flag.Bool("fail-unexplained", false, "exit 1 after writing the table if a difference is unexplained or a report is missing")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: fidelity-table [--doc FILE] [--measured TEXT] [--fail-unexplained] REPORT.json...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	failed, err := run(*doc, *measured, flag.Args())
	if err != nil {
		fmt.Fprintf(os.Stderr, "fidelity-table: %v\n", err)
		os.Exit(1)
	}
	if *failUnexplained && failed != "" {
		fmt.Fprintf(os.Stderr, "fidelity-table: %s (the table is written)\n", failed)
		os.Exit(1)
	}
}

// run writes the table of the reports in files into doc, and says what
// --fail-unexplained fails for ("" for nothing).
func run(doc, measured string, files []string) (failed string, err error) {
	reports, missing, err := readReports(files)
	if err != nil {
		return "", err
	}
	var table strings.Builder
	if measured != "" {
		fmt.Fprintf(&table, "Measured %s.\n\n", measured)
	}
	if err := diff.WriteTable(&table, reports, missing...); err != nil {
		return "", err
	}
	fmt.Print(table.String())
	text, err := os.ReadFile(doc)
	if err != nil {
		return "", err
	}
	out, err := itext.ReplaceSection(string(text), begin, end, table.String())
	if err != nil {
		return "", fmt.Errorf("%s: %w", doc, err)
	}
	if err := os.WriteFile(doc, []byte(out), 0o644); err != nil {
		return "", err
	}
	var unexplained, in int
	for _, r := range reports {
		if n := len(r.Unexplained()); n > 0 {
			unexplained += n
			in++
		}
	}
	var why []string
	if unexplained > 0 {
		why = append(why, fmt.Sprintf("%d differences unexplained in %d scenarios", unexplained, in))
	}
	if len(missing) > 0 {
		why = append(why, fmt.Sprintf("%d scenarios without a report", len(missing)))
	}
	return strings.Join(why, "; "), nil
}

// readReports reads each file as a csisim diff --json report; a file
// that holds none (empty: the diff could not start) is missing, named
// after the file, with its log's path (the make targets write X.log
// beside X.json).
func readReports(files []string) ([]*diff.Report, []diff.Missing, error) {
	var reports []*diff.Report
	var missing []diff.Missing
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if len(bytes.TrimSpace(data)) == 0 {
			missing = append(missing, diff.Missing{Scenario: name, Why: whyMissing(strings.TrimSuffix(f, ".json") + ".log")})
			continue
		}
		var r diff.Report
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, nil, fmt.Errorf("%s: not a csisim diff --json report: %w", f, err)
		}
		reports = append(reports, &r)
	}
	return reports, missing, nil
}

// whyMissing is what a missing report's log says last (the diff's error:
// the scenario refused, a cluster that did not start), for a table cell,
// and where the log is.
func whyMissing(log string) string {
	data, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	const most = 200
	if len(last) > most {
		last = last[:most] + "..."
	}
	last = strings.ReplaceAll(last, "|", "\\|")
	if last == "" {
		return "see " + log
	}
	return last + " (" + log + ")"
}
