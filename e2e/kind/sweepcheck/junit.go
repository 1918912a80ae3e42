package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// report is a JUnit report as csisim run --junit writes it.
type report struct {
	XMLName xml.Name `xml:"testsuites"`
	Suites  []suite  `xml:"testsuite"`
}

type suite struct {
	Name       string      `xml:"name,attr"`
	Tests      int         `xml:"tests,attr"`
	Failures   int         `xml:"failures,attr"`
	Errors     int         `xml:"errors,attr"`
	Skipped    int         `xml:"skipped,attr"`
	Time       string      `xml:"time,attr"`
	Properties *properties `xml:"properties,omitempty"`
	Cases      []testCase  `xml:"testcase"`
}

type properties struct {
	Property []property `xml:"property"`
}

type property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type testCase struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Time      string   `xml:"time,attr"`
	Failure   *failed  `xml:"failure,omitempty"`
	SystemOut string   `xml:"system-out,omitempty"`
	Skipped   *skipped `xml:"skipped,omitempty"`
}

type failed struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

type skipped struct {
	Message string `xml:"message,attr"`
}

// readReport reads a shard's report; its suites are named after the file
// (junit-2.xml: shard 2), so that the merged report tells the shards apart.
func readReport(file string) ([]suite, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var r report
	if err := xml.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a JUnit report: %w", file, err)
	}
	if len(r.Suites) == 0 {
		return nil, fmt.Errorf("%s: no test suite", file)
	}
	shard := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "junit-"), ".xml")
	for i := range r.Suites {
		r.Suites[i].Name = fmt.Sprintf("%s shard %s", r.Suites[i].Name, shard)
	}
	return r.Suites, nil
}

// writeMerged writes the shards' suites as one report.
func writeMerged(file string, suites []suite) error {
	type merged struct {
		XMLName  xml.Name `xml:"testsuites"`
		Name     string   `xml:"name,attr"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Errors   int      `xml:"errors,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Suites   []suite  `xml:"testsuite"`
	}
	m := merged{Name: "csisim seed sweep", Suites: suites}
	for _, s := range suites {
		m.Tests += s.Tests
		m.Failures += s.Failures
		m.Errors += s.Errors
		m.Skipped += s.Skipped
	}
	b, err := xml.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}
