package main

import (
	"time"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/sanityrun"
)

// testJUnit is the JUnit report of `csisim test`: a suite "csi-sanity"
// with a test case per spec, and a suite "scenarios" with a test case per
// scenario, a skipped one with the reason; a failing scenario's case is
// the seed sweep's (junitCase), its body ending with the command that
// runs it alone.
func testJUnit(p *profile.Profile, sanity *sanityrun.Report, results []scenarioResult, replay func(name string) string, wall time.Duration) junitTestsuites {
	report := junitTestsuites{Name: "csisim test " + p.Name, junitCounts: junitCounts{Time: seconds(wall)}}
	props := []junitProperty{{Name: "driver", Value: p.Name}, {Name: "profile", Value: p.File}}
	if sanity != nil {
		suite := junitTestsuite{Name: "csi-sanity", junitCounts: junitCounts{Time: seconds(sanity.Duration)}, Properties: props}
		for _, s := range sanity.Specs {
			tc := junitTestcase{Name: s.Name, Classname: "csi-sanity", Time: seconds(s.Duration)}
			switch s.State {
			case sanityrun.Failed:
				tc.Failure = &junitProblem{Message: firstLine(s.Message), Type: "spec", Body: s.Message + "\n" + s.Location + "\n"}
			case sanityrun.Skipped:
				tc.Skipped = &junitProblem{Message: firstLine(s.Message)}
			}
			suite.Cases = append(suite.Cases, tc)
			suite.count(tc)
		}
		if sanity.Error != "" {
			tc := junitTestcase{Name: "csi-sanity suite", Classname: "csi-sanity", Time: seconds(0),
				Error: &junitProblem{Message: firstLine(sanity.Error), Type: "suite", Body: sanity.Error + "\n"}}
			suite.Cases = append(suite.Cases, tc)
			suite.count(tc)
		}
		report.Suites = append(report.Suites, suite)
	}
	suite := junitTestsuite{Name: "scenarios", Properties: props}
	var scenarioWall time.Duration
	for _, r := range results {
		name := r.name
		var tc junitTestcase
		if r.skipped != "" {
			tc = junitTestcase{Name: name, Classname: "scenarios", Time: seconds(0), Skipped: &junitProblem{Message: r.skipped}}
		} else {
			tc = junitCase("scenarios", r.seedResult, func(uint64) string { return replay(name) })
			tc.Name = name
		}
		scenarioWall += r.Wall
		suite.Cases = append(suite.Cases, tc)
		suite.count(tc)
	}
	suite.Time = seconds(scenarioWall)
	report.Suites = append(report.Suites, suite)
	for _, s := range report.Suites {
		report.Tests += s.Tests
		report.Failures += s.Failures
		report.Errors += s.Errors
		report.Skipped += s.Skipped
	}
	return report
}
