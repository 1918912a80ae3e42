package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The JUnit XML report of a run, in the form CI systems read (Jenkins'
// junit plugin, GitHub Actions test reporters, GitLab): <testsuites>
// holding one <testsuite> per scenario, one <testcase> per seed; a case
// that did not pass holds a <failure> (the scenario failed: a step or an
// invariant), an <error> (the run could not tell: the cluster did not
// start, a driver died, cleaning up failed) or <skipped> (interrupted).
// Only attributes those readers know are written; no timestamp, so that
// the file changes only with the results and the times.

type junitTestsuites struct {
	XMLName xml.Name `xml:"testsuites"`
	Name    string   `xml:"name,attr"`
	junitCounts
	Suites []junitTestsuite `xml:"testsuite"`
}

type junitTestsuite struct {
	Name string `xml:"name,attr"`
	junitCounts
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitTestcase `xml:"testcase"`
}

// junitCounts are the totals a suite, and the file, carry as attributes.
type junitCounts struct {
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
}

// count adds a test case to the totals.
func (c *junitCounts) count(tc junitTestcase) {
	c.Tests++
	switch {
	case tc.Failure != nil:
		c.Failures++
	case tc.Error != nil:
		c.Errors++
	case tc.Skipped != nil:
		c.Skipped++
	}
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestcase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
	// Properties carry a seed's known upstream bugs (known-upstream):
	// a case that passes, as far as CI counts, but says so.
	Properties *junitProperties `xml:"properties,omitempty"`
	SystemOut  *junitText       `xml:"system-out,omitempty"`
}

// junitProperties is a case's <properties>, written only when it has some.
type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

// junitProblem is a <failure>, <error> or <skipped>: a one-line message
// and, in the body, the whole story.
type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",cdata"`
}

// junitText is an element of text, kept as written (CDATA) rather than
// with every newline escaped.
type junitText struct {
	Text string `xml:",cdata"`
}

// junitReport is the report of the runs of one scenario (from file), one
// test case per seed, in the order given.
func junitReport(scenarioName, file string, results []seedResult, replay func(uint64) string, wall time.Duration) junitTestsuites {
	suite := junitTestsuite{Name: scenarioName, junitCounts: junitCounts{Time: seconds(wall)}, Properties: []junitProperty{{Name: "file", Value: file}}}
	for _, r := range results {
		tc := junitCase(scenarioName, r, replay)
		suite.Cases = append(suite.Cases, tc)
		suite.count(tc)
	}
	return junitTestsuites{Name: "csisim", junitCounts: suite.junitCounts, Suites: []junitTestsuite{suite}}
}

// junitCase is the test case of one seed. A failing case's body ends with
// the command that replays it.
func junitCase(scenarioName string, r seedResult, replay func(uint64) string) junitTestcase {
	tc := junitTestcase{Name: "seed " + strconv.FormatUint(r.Seed, 10), Classname: scenarioName, Time: seconds(r.Wall),
		SystemOut: &junitText{Text: fmt.Sprintf("%s, %s of cluster time\nreplay: %s\n", r.Steps, r.ClusterTime.Round(time.Millisecond), replay(r.Seed))}}
	switch {
	case r.Interrupted:
		tc.Skipped = &junitProblem{Message: "interrupted before the run ended"}
	case r.Skipped != "":
		// Nothing ran, so there is nothing to replay.
		tc.Skipped = &junitProblem{Message: r.Skipped}
		tc.SystemOut = nil
	case r.Failure != nil:
		p := &junitProblem{Message: r.Failure.Summary, Type: r.Failure.Cause,
			Body: fmt.Sprintf("%s\nreplay: %s\n", strings.Trim(r.Failure.Detail, "\n"), replay(r.Seed))}
		if r.Failure.Kind == "failure" {
			tc.Failure = p
		} else {
			tc.Error = p
		}
	}
	// Violations a known Kubernetes bug caused are no failure; CI shows
	// them as a property of the case and in its output.
	if len(r.KnownUpstream) > 0 && !r.Interrupted {
		tc.Properties = &junitProperties{}
		for _, bug := range knownBugs(r.KnownUpstream) {
			tc.Properties.Property = append(tc.Properties.Property, junitProperty{Name: "known-upstream", Value: bug})
		}
		if tc.SystemOut == nil {
			tc.SystemOut = &junitText{}
		}
		tc.SystemOut.Text = strings.Join(r.KnownUpstream, "\n") + "\n" + tc.SystemOut.Text
	}
	return tc
}

// writeJUnit writes the report to path.
func writeJUnit(path string, report junitTestsuites) error {
	data, err := xml.MarshalIndent(report, "", "  ")
	if err != nil {
		return fmt.Errorf("writing the JUnit report: %w", err)
	}
	data = append([]byte(xml.Header), append(data, '\n')...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing the JUnit report: %w", err)
	}
	return nil
}

// seconds is a duration as JUnit times are written: seconds, with
// milliseconds.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}
