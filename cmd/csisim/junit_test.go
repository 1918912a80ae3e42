package main

import (
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/scenarios"
)

// The elements a CI system reads from a JUnit report, parsed back from
// the file as a reader would, independently of the types that write it.
type readSuites struct {
	XMLName xml.Name    `xml:"testsuites"`
	Tests   int         `xml:"tests,attr"`
	Suites  []readSuite `xml:"testsuite"`
}

type readSuite struct {
	Name     string     `xml:"name,attr"`
	Tests    int        `xml:"tests,attr"`
	Failures int        `xml:"failures,attr"`
	Errors   int        `xml:"errors,attr"`
	Skipped  int        `xml:"skipped,attr"`
	Cases    []readCase `xml:"testcase"`
}

type readCase struct {
	Name      string       `xml:"name,attr"`
	Classname string       `xml:"classname,attr"`
	Time      string       `xml:"time,attr"`
	Failure   *readProblem `xml:"failure"`
	Error     *readProblem `xml:"error"`
	Skipped   *readProblem `xml:"skipped"`
}

type readProblem struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

func TestJUnitReport(t *testing.T) {
	passed := runOutcome{seed: 3, result: &scenarios.Result{Steps: []scenarios.StepResult{{Step: 1, Outcome: scenarios.Passed}}}, wall: 120 * time.Millisecond}
	stepErr := &scenarios.StepError{Step: 2, Name: "claim bound", File: "s.yaml", Line: 9, Err: errors.New("timed out <after> 5s & \"more\"\nsecond line"),
		Expected: "Bound", Observed: "Pending"}
	failed := runOutcome{seed: 17, runErr: stepErr, wall: time.Second,
		result: &scenarios.Result{Steps: []scenarios.StepResult{{Step: 1, Outcome: scenarios.Passed}, {Step: 2, Outcome: scenarios.Failed}}}}
	broken := runOutcome{seed: 18, startErr: &startError{what: "the simulated cluster", err: errors.New("no driver ]]> here")}}
	cut := runOutcome{seed: 19, interrupted: true}
	replay := func(seed uint64) string {
		return "csisim run --seed " + strconv.FormatUint(seed, 10) + " --mock-driver s.yaml"
	}

	file := filepath.Join(t.TempDir(), "report.xml")
	if err := writeJUnit(file, junitReport("claims", "s.yaml", []seedResult{passed.seedResult(), failed.seedResult(), broken.seedResult(), cut.seedResult()}, replay, 2*time.Second)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(raw), xml.Header) {
		t.Errorf("the report does not start with the XML declaration:\n%s", raw)
	}
	var got readSuites
	if err := xml.Unmarshal(raw, &got); err != nil {
		t.Fatalf("the report is not well-formed XML: %v\n%s", err, raw)
	}
	if got.Tests != 4 || len(got.Suites) != 1 {
		t.Fatalf("%d tests in %d suites, want 4 in 1:\n%s", got.Tests, len(got.Suites), raw)
	}
	suite := got.Suites[0]
	if suite.Name != "claims" || suite.Tests != 4 || suite.Failures != 1 || suite.Errors != 1 || suite.Skipped != 1 || len(suite.Cases) != 4 {
		t.Fatalf("suite %+v, want claims with 4 tests, 1 failure, 1 error, 1 skipped:\n%s", suite, raw)
	}
	for i, want := range []string{"seed 3", "seed 17", "seed 18", "seed 19"} {
		if c := suite.Cases[i]; c.Name != want || c.Classname != "claims" {
			t.Errorf("test case %d is %q of %q, want %q of claims", i, c.Name, c.Classname, want)
		}
	}
	if c := suite.Cases[0]; c.Failure != nil || c.Error != nil || c.Skipped != nil || c.Time != "0.120" {
		t.Errorf("the passing seed: %+v, want no failure, time 0.120", c)
	}

	f := suite.Cases[1].Failure
	if f == nil {
		t.Fatalf("seed 17 has no <failure>:\n%s", raw)
	}
	if want := `step 2 "claim bound" at s.yaml:9: timed out <after> 5s & "more"`; f.Message != want {
		t.Errorf("seed 17's failure message %q, want its first line %q", f.Message, want)
	}
	for _, want := range []string{"second line", "expected: Bound", "observed: Pending", "replay: csisim run --seed 17 --mock-driver s.yaml"} {
		if !strings.Contains(f.Body, want) {
			t.Errorf("seed 17's failure body lacks %q:\n%s", want, f.Body)
		}
	}
	e := suite.Cases[2].Error
	if e == nil || !strings.Contains(e.Body, "no driver ]]> here") || !strings.Contains(e.Body, "replay: csisim run --seed 18") {
		t.Errorf("seed 18: error %+v, want the start failure, intact, and the replay command", e)
	}
	if suite.Cases[3].Skipped == nil {
		t.Errorf("seed 19, interrupted, is not skipped")
	}
}
