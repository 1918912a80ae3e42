// Package sanityrun runs csi-sanity (github.com/kubernetes-csi/csi-test's
// sanity package, as a library) against a driver started from a driver
// profile, and reports each spec: passed, failed (with the failure) or
// skipped (with the reason csi-sanity gave).
//
// csi-sanity is a Ginkgo suite, and Ginkgo runs one suite per process
// (RunSpecs may be called once), so Run is for a process of its own:
// `csisim sanity`, which `csisim test` starts as a child.
package sanityrun

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/csisim/csisim/drivers/profile"
)

// Config is one csi-sanity run.
type Config struct {
	Profile    *profile.Profile
	Deployment *Deployment
	// Dir is the run's own directory: csi-sanity's target and staging
	// paths go below it.
	Dir string
	// Focus, if set, runs only the specs whose full text it matches.
	Focus string
	// Skip are more regular expressions on the specs' full text, as
	// ginkgo's --skip, besides the profile's sanity.skip: the matching
	// specs are reported skipped.
	Skip []string
	// Timeout bounds the whole suite; default 30 minutes.
	Timeout time.Duration
}

// The state of a spec in a Report.
const (
	Passed  = "passed"
	Failed  = "failed"
	Skipped = "skipped"
)

// Spec is how one csi-sanity spec ended.
type Spec struct {
	// Name is the spec's full text: its containers and its own, e.g.
	// "Node Service NodeGetCapabilities should return appropriate capabilities".
	Name  string `json:"name"`
	State string `json:"state"`
	// Message is why it failed or was skipped; "" for a pass.
	Message string `json:"message,omitempty"`
	// Location is where in csi-sanity it failed, file:line.
	Location string `json:"location,omitempty"`
	// LeftBehind is what its clean-up could not remove: a mount the
	// driver did not unmount, a path it did not remove.
	LeftBehind []string      `json:"leftBehind,omitempty"`
	Duration   time.Duration `json:"duration"`
}

// Report is how a csi-sanity run went.
type Report struct {
	Driver string `json:"driver"`
	// Specs are the specs that ran or were skipped, in the order they ran;
	// those --focus left out are not listed.
	Specs []Spec `json:"specs"`
	// Error is what kept the suite itself from running or ending well
	// (e.g. a failure in a suite node, the timeout); "" if nothing did.
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration"`
}

// Count returns how many specs are in state.
func (r *Report) Count(state string) int {
	n := 0
	for _, s := range r.Specs {
		if s.State == state {
			n++
		}
	}
	return n
}

// suiteT is the testing.T that Ginkgo's RunSpecs wants outside of `go
// test`: Ginkgo only tells it that the suite failed.
type suiteT struct{ failed bool }

func (t *suiteT) Fail() { t.failed = true }

// Run runs csi-sanity against cfg.Deployment and returns each spec's
// result. Call it at most once per process.
func Run(cfg Config) (*Report, error) {
	if cfg.Focus != "" {
		if _, err := regexp.Compile(cfg.Focus); err != nil {
			return nil, fmt.Errorf("focus %q: %w", cfg.Focus, err)
		}
	}
	skips, err := skipList(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("preparing %s: %w", cfg.Dir, err)
	}
	paths := newSpecPaths(cfg.Dir)
	sc := sanityConfig(cfg, paths)
	if cfg.Deployment.ControllerEndpoint != "" {
		route, closeRoute, err := routeToController(cfg.Deployment.ControllerEndpoint)
		if err != nil {
			return nil, err
		}
		defer closeRoute()
		sc.DialOptions = append(sc.DialOptions, route)
	}

	ctx := sanity.GinkgoTest(&sc)
	var suite types.Report
	ginkgo.ReportAfterSuite("csisim sanity report", func(r types.Report) { suite = r })
	gomega.RegisterFailHandler(ginkgo.Fail)
	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	suiteConfig.RandomSeed = 1 // the same order every run
	suiteConfig.Timeout = cfg.Timeout
	if suiteConfig.Timeout == 0 {
		suiteConfig.Timeout = 30 * time.Minute
	}
	if cfg.Focus != "" {
		suiteConfig.FocusStrings = []string{cfg.Focus}
	}
	for _, s := range skips {
		suiteConfig.SkipStrings = append(suiteConfig.SkipStrings, s.expr.String())
	}
	reporterConfig.Succinct = true
	reporterConfig.NoColor = true
	t := &suiteT{}
	ginkgo.RunSpecs(t, "csi-sanity "+cfg.Profile.Name, suiteConfig, reporterConfig)
	ctx.Finalize()
	r := report(cfg.Profile.Name, suite, cfg.Focus, skips)
	for i := range r.Specs {
		r.Specs[i].LeftBehind = paths.leftBehind(r.Specs[i].Name)
	}
	return r, nil
}

// sanityConfig is csi-sanity's configuration for the driver: each spec
// gets target and staging paths of its own below cfg.Dir (paths).
func sanityConfig(cfg Config, paths *specPaths) sanity.TestConfig {
	sc := sanity.NewTestConfig()
	sc.Address = cfg.Deployment.NodeEndpoint
	sc.ControllerAddress = cfg.Deployment.ControllerEndpoint
	sc.TargetPath = filepath.Join(cfg.Dir, "target")
	sc.StagingPath = filepath.Join(cfg.Dir, "staging")
	sc.CreateTargetDir, sc.CreateStagingDir = paths.target, paths.staging
	sc.RemoveTargetPath, sc.RemoveStagingPath = paths.remove, paths.remove
	sc.CheckPath = paths.kind
	sc.TestVolumeParameters = cfg.Profile.StorageClass.Parameters
	// Small volumes keep mkfs and copies quick; expansion still doubles
	// them.
	sc.TestVolumeSize = 64 << 20
	sc.TestVolumeExpandSize = 128 << 20
	sc.TestNodeVolumeAttachLimit = cfg.Deployment.VolumeLimit > 0
	// Each idempotency spec repeats its call this many times; csi-sanity's
	// default is 10, which on a real-mount driver costs minutes for no
	// more coverage than a few repeats give.
	sc.IdempotentCount = 3
	return sc
}

// routeToController is a dial option for the node endpoint of a split
// driver. csi-sanity asks the node endpoint's identity service whether the
// driver has a controller service, and without one skips
// ControllerPublishVolume before staging; a CO asks the controller plugin.
// So GetPluginCapabilities goes to the controller plugin, as a CO would
// send it, and every other call to the node plugin.
func routeToController(controllerEndpoint string) (grpc.DialOption, func(), error) {
	conn, err := grpc.NewClient(controllerEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to the controller plugin: %w", err)
	}
	route := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if method == "/csi.v1.Identity/GetPluginCapabilities" {
			return conn.Invoke(ctx, method, req, reply, opts...)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	return route, func() { conn.Close() }, nil
}

// skip is a regular expression of specs to skip, and why.
type skip struct {
	expr *regexp.Regexp
	why  string
}

// skipList is the profile's sanity.skip, with its reasons, and cfg.Skip,
// in a fixed order.
func skipList(cfg Config) ([]skip, error) {
	var out []skip
	for _, expr := range slices.Sorted(maps.Keys(cfg.Profile.Sanity.Skip)) {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("driver profile: sanity.skip %q: %w", expr, err)
		}
		out = append(out, skip{re, "driver profile: " + strings.TrimSpace(cfg.Profile.Sanity.Skip[expr])})
	}
	for _, expr := range cfg.Skip {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("skip %q: %w", expr, err)
		}
		out = append(out, skip{re, "skipped by --sanity-skip " + expr})
	}
	return out, nil
}

// report turns Ginkgo's report into ours. Ginkgo marks the specs a focus
// or a skip left out as skipped with no message (csi-sanity's own skips
// have one): those a skip matches are reported with its reason, the
// others not at all. It reports pending specs whatever the focus.
func report(driver string, suite types.Report, focus string, skips []skip) *Report {
	r := &Report{Driver: driver, Duration: suite.RunTime}
	var focusRE *regexp.Regexp
	if focus != "" {
		focusRE = regexp.MustCompile(focus) // Run checked it
	}
	for _, s := range suite.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt {
			if s.State.Is(types.SpecStateFailureStates) {
				r.Error = strings.TrimSpace(fmt.Sprintf("%s %s: %s", s.LeafNodeType, s.LeafNodeText, s.Failure.Message))
			}
			continue
		}
		spec := Spec{Name: s.FullText(), Duration: s.RunTime}
		switch {
		case s.State == types.SpecStatePassed:
			spec.State = Passed
		case s.State == types.SpecStatePending:
			if focusRE != nil && !focusRE.MatchString(s.FullText()) {
				continue // pending, and not selected by the focus anyway
			}
			spec.State, spec.Message = Skipped, "pending: disabled in csi-sanity itself"
		case s.State == types.SpecStateSkipped:
			if s.Failure.Message == "" && s.Failure.Location.FileName == "" {
				why := skippedBy(skips, s.FullText())
				if why == "" {
					continue // not selected by the focus
				}
				spec.State, spec.Message = Skipped, why
				break
			}
			spec.State, spec.Message = Skipped, strings.TrimSpace(s.Failure.Message)
		default:
			spec.State = Failed
			spec.Message = strings.TrimSpace(s.Failure.Message)
			if spec.Message == "" {
				spec.Message = s.State.String()
			}
			spec.Location = s.Failure.Location.String()
		}
		r.Specs = append(r.Specs, spec)
	}
	if !suite.SuiteSucceeded && r.Error == "" && r.Count(Failed) == 0 {
		r.Error = strings.Join(suite.SpecialSuiteFailureReasons, "; ")
		if r.Error == "" {
			r.Error = "the suite failed without a failing spec"
		}
	}
	return r
}

// skippedBy is why the first skip that matches a spec's text skips it, ""
// if none does.
func skippedBy(skips []skip, text string) string {
	for _, s := range skips {
		if s.expr.MatchString(text) {
			return s.why
		}
	}
	return ""
}

// Notes say what the report's figures alone do not: the first failed spec
// whose clean-up left something behind (a mount, a path), as the likely
// cause of the failures after it; each spec has paths of its own, so what
// it leaves cannot fail another's set-up, but the driver may still
// remember the volume it left published or staged.
func (r *Report) Notes() []string {
	var notes []string
	for i, s := range r.Specs {
		if s.State != Failed || len(s.LeftBehind) == 0 {
			continue
		}
		after := 0
		for _, later := range r.Specs[i+1:] {
			if later.State == Failed {
				after++
			}
		}
		note := fmt.Sprintf("%q failed and its clean-up left %s behind", s.Name, strings.Join(s.LeftBehind, ", "))
		if after > 0 {
			note += fmt.Sprintf(": the likely cause of the %d failures after it", after)
		}
		return append(notes, note)
	}
	return notes
}
