package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/drivers/sanityrun"
	"github.com/csisim/csisim/runroot"
	"github.com/csisim/csisim/sim/clusterprofile"
)

func sanityCommand() *command {
	return &command{
		name:    "sanity",
		summary: "run csi-sanity against the driver of a profile",
		usage:   []string{"csisim sanity --driver PROFILE [flags]"},
		about: "Runs csi-sanity (kubernetes-csi/csi-test) against the driver of the profile, its controller\n" +
			"and node plugins started as the profile says, and exits 1 if a spec failed.",
		signals: true,
		new:     func() subcommand { return &sanityCmd{} },
	}
}

// sanityCmd is `csisim sanity`: csi-sanity against the driver of a
// profile, started outside any cluster. `csisim test` runs it as a child
// process, because Ginkgo, which csi-sanity is written in, runs one suite
// per process; it prints Ginkgo's progress and csisim's count of the
// specs.
type sanityCmd struct {
	invocation
	driver     string
	focus      string
	skips      stringList
	jsonResult string
	driverLog  string
}

func (c *sanityCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.driver, "driver", "", "the driver profile: a shipped profile's name ("+listOr(profiles.Names())+") or a profile file")
	fs.StringVar(&c.focus, "sanity-focus", "", "run only the csi-sanity specs whose full text matches this regular expression")
	fs.Var(&c.skips, "sanity-skip", "skip the csi-sanity specs whose full text matches this regular expression (repeatable),\n"+
		"besides those the profile's sanity.skip lists")
	fs.StringVar(&c.jsonResult, "json-result", "", "write each spec's result to this file as JSON")
	fs.StringVar(&c.driverLog, "driver-log", "", "write the driver processes' output to this file")
}

func (c *sanityCmd) Run(ctx context.Context) error {
	if c.driver == "" {
		return errShowUsage
	}
	p, err := profiles.Load(c.driver)
	if err != nil {
		return usageError(err)
	}
	report, err := runSanity(ctx, p, sanityrun.Config{Focus: c.focus, Skip: c.skips}, c.driverLog)
	if err != nil {
		fmt.Fprintf(c.stderr, "csisim: %v\n", err)
		if report == nil {
			report = &sanityrun.Report{Driver: p.Name}
		}
		report.Error = err.Error()
	}
	fmt.Fprintf(c.stdout, "\ncsi-sanity %s: %d passed, %d failed, %d skipped\n", p.Name,
		report.Count(sanityrun.Passed), report.Count(sanityrun.Failed), report.Count(sanityrun.Skipped))
	for _, note := range report.Notes() {
		fmt.Fprintf(c.stdout, "note: %s\n", note)
	}
	var failed error
	if report.Error != "" || report.Count(sanityrun.Failed) > 0 {
		failed = errFailed
	}
	if c.jsonResult != "" {
		data, err := json.Marshal(report)
		if err == nil {
			err = os.WriteFile(c.jsonResult, append(data, '\n'), 0o644)
		}
		if err != nil {
			return fmt.Errorf("--json-result: %w", err)
		}
	}
	return failed
}

// runSanity starts the profile's driver in a run root of its own, runs
// csi-sanity against it (run's Focus and Skip) and tears everything down
// again.
func runSanity(ctx context.Context, p *profile.Profile, run sanityrun.Config, driverLog string) (_ *sanityrun.Report, err error) {
	sweepDeadRuns(os.Stderr)
	root, err := runroot.New("sanity")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, root.Close()) }()
	built := ""
	if p.Start.Build != "" {
		if built, err = clusterprofile.Build(ctx, p.Start.Build, os.Stderr); err != nil {
			return nil, fmt.Errorf("driver profile %s: %w", p.File, err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the csisim binary for {csisim}: %w", err)
	}
	cfg := sanityrun.DeployConfig{Profile: p, Dir: root.Path("driver"), Binary: exe, Built: built, Record: root.RecordProcess}
	if driverLog != "" {
		f, err := os.Create(driverLog)
		if err != nil {
			return nil, fmt.Errorf("--driver-log: %w", err)
		}
		defer f.Close()
		cfg.Log = f
	}
	dep, err := sanityrun.Deploy(ctx, cfg)
	defer func() { err = errors.Join(err, dep.Stop()) }()
	if err != nil {
		return nil, fmt.Errorf("starting the driver of %s: %w", p.File, err)
	}
	run.Profile, run.Deployment, run.Dir = p, dep, root.Path("sanity")
	return sanityrun.Run(run)
}

// stringList is a flag that may be given several times.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ", ") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// listOr is "a, b or c".
func listOr(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	out := words[0]
	for _, w := range words[1 : len(words)-1] {
		out += ", " + w
	}
	return out + " or " + words[len(words)-1]
}
