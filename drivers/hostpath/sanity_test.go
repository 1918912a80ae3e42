package hostpath

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// sanityRun is one csi-sanity run: a driver deployment and the sanity
// configuration to test it with.
type sanityRun struct {
	name string
	// access is the sanity TestVolumeAccessType: "mount" or "block".
	access string
	kind   volumeKind
	// split serves the controller and the node service from two
	// processes (two drivers in this process, with separate sockets and
	// state, as in a real deployment); otherwise one ModeAll driver
	// serves both.
	split bool
	// noAttach and noStage start the driver with --no-attach and
	// --no-stage: no PUBLISH_UNPUBLISH_VOLUME, no STAGE_UNSTAGE_VOLUME.
	noAttach, noStage bool
}

var sanityRuns = []sanityRun{
	{name: "mount-directory/all", access: "mount", kind: kindDirectory},
	{name: "mount-block/all", access: "mount", kind: kindBlock},
	{name: "block-block/all", access: "block", kind: kindBlock},
	{name: "mount-directory/split", access: "mount", kind: kindDirectory, split: true},
	{name: "mount-block/split", access: "mount", kind: kindBlock, split: true},
	{name: "block-block/split", access: "block", kind: kindBlock, split: true},
	{name: "mount-directory/split/no-attach-no-stage", access: "mount", kind: kindDirectory, split: true, noAttach: true, noStage: true},
	{name: "mount-block/split/no-stage", access: "mount", kind: kindBlock, split: true, noStage: true},
}

const (
	sanityNodeID = "sanity-node"
	sanityZone   = "zone-1"
	// Every sanity run places its volumes in one zone, several of them
	// alive at once, so the pool is large; they are sparse or directories
	// and take no room for real.
	sanityPool = 1 << 40
	// A node limit above what any spec publishes at once except the one
	// that tests the limit.
	sanityMaxVolumes = 8
)

// TestSanity runs csi-sanity (github.com/kubernetes-csi/csi-test) against
// the driver for each of sanityRuns, in one Ginkgo suite: Ginkgo allows one
// RunSpecs per process. It logs, for each run, how many specs passed,
// failed and were skipped, and why each skipped spec was skipped; run it
// with -v to see that list.
func TestSanity(t *testing.T) {
	type deployed struct {
		run    sanityRun
		config sanity.TestConfig
	}
	var runs []*deployed
	logs := &lockedBuffer{}
	for _, run := range sanityRuns {
		env := newTestEnv(t)
		cfg := sanity.NewTestConfig()
		cfg.TargetPath = filepath.Join(env.dir, "sanity-target")
		cfg.StagingPath = filepath.Join(env.dir, "sanity-staging")
		cfg.TestVolumeAccessType = run.access
		if run.kind == kindBlock {
			cfg.TestVolumeParameters = map[string]string{ParameterKind: string(kindBlock)}
		}
		// Small volumes keep mkfs and copies quick; the expansion still
		// doubles them.
		cfg.TestVolumeSize = 64 << 20
		cfg.TestVolumeExpandSize = 128 << 20
		cfg.TestNodeVolumeAttachLimit = true
		cfg.IdempotentCount = 10

		driverCfg := Config{
			NodeID:            sanityNodeID,
			Zone:              sanityZone,
			CapacityPerZone:   sanityPool,
			MaxVolumesPerNode: sanityMaxVolumes,
			NoAttach:          run.noAttach,
			NoStage:           run.noStage,
			Log:               logs,
		}
		if !run.split {
			driverCfg.Mode = ModeAll
			cfg.Address = env.start(t, driverCfg).socket
		} else {
			ctrlCfg := driverCfg
			ctrlCfg.Mode = ModeController
			ctrlCfg.NodeID = ""
			ctrl := env.start(t, ctrlCfg)
			nodeCfg := driverCfg
			nodeCfg.Mode = ModeNode
			cfg.Address = env.start(t, nodeCfg).socket
			cfg.ControllerAddress = ctrl.socket
			cfg.DialOptions = append(cfg.DialOptions, routeToController(t, ctrl.socket))
		}
		runs = append(runs, &deployed{run: run, config: cfg})
	}

	for _, r := range runs {
		ginkgo.Describe(r.run.name, func() {
			sanity.GinkgoTest(&r.config)
		})
	}
	var report types.Report
	ginkgo.ReportAfterSuite("hostpath csi-sanity summary", func(r types.Report) { report = r })
	gomega.RegisterFailHandler(ginkgo.Fail)
	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	// Dots instead of the full spec tree; failures are reported in full
	// anyway.
	reporterConfig.Succinct = true
	ok := ginkgo.RunSpecs(t, "hostpath csi-sanity", suiteConfig, reporterConfig)
	if !ok {
		t.Logf("driver log:\n%s", logs.String())
	}
	t.Log(summarizeSanity(report))
}

// routeToController is a dial option for the node endpoint of a split
// deployment. csi-sanity asks the node endpoint's identity service whether
// there is a controller service, and without one skips
// ControllerPublishVolume before staging, which a block volume needs. A CO
// asks the controller plugin instead, so this option sends
// GetPluginCapabilities there, like a CO would; every other call reaches
// the node plugin.
func routeToController(t testing.TB, controllerSocket string) grpc.DialOption {
	conn, err := grpc.NewClient("unix://"+controllerSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if method == "/csi.v1.Identity/GetPluginCapabilities" {
			return conn.Invoke(ctx, method, req, reply, opts...)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
}

// summarizeSanity counts the specs of each run by state and lists the
// skipped ones with the reason csi-sanity gave.
func summarizeSanity(report types.Report) string {
	type counts struct {
		passed, failed, skipped, pending int
		skips                            []string
	}
	byRun := map[string]*counts{}
	for _, spec := range report.SpecReports {
		if spec.LeafNodeType != types.NodeTypeIt || len(spec.ContainerHierarchyTexts) == 0 {
			continue
		}
		run := spec.ContainerHierarchyTexts[0]
		c := byRun[run]
		if c == nil {
			c = &counts{}
			byRun[run] = c
		}
		name := strings.Join(append(slicesClone(spec.ContainerHierarchyTexts[1:]), spec.LeafNodeText), " / ")
		switch spec.State {
		case types.SpecStatePassed:
			c.passed++
		case types.SpecStateSkipped:
			c.skipped++
			c.skips = append(c.skips, fmt.Sprintf("%s: %s", name, strings.TrimSpace(spec.Failure.Message)))
		case types.SpecStatePending:
			c.pending++
			c.skips = append(c.skips, fmt.Sprintf("%s: pending (XIt, disabled in csi-sanity itself)", name))
		default:
			c.failed++
		}
	}
	var b strings.Builder
	runs := make([]string, 0, len(byRun))
	for run := range byRun {
		runs = append(runs, run)
	}
	sort.Strings(runs)
	for _, run := range runs {
		c := byRun[run]
		fmt.Fprintf(&b, "\n%s: %d passed, %d failed, %d skipped, %d pending", run, c.passed, c.failed, c.skipped, c.pending)
	}
	// The runs mostly skip the same specs: list each distinct set once.
	var lists []string
	listRuns := map[string][]string{}
	for _, run := range runs {
		list := strings.Join(byRun[run].skips, "\n    ")
		if listRuns[list] == nil {
			lists = append(lists, list)
		}
		listRuns[list] = append(listRuns[list], run)
	}
	for _, list := range lists {
		fmt.Fprintf(&b, "\n\nskipped or pending in %s:\n    %s", strings.Join(listRuns[list], ", "), list)
	}
	return b.String() + "\n"
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// lockedBuffer collects the log lines of drivers that serve concurrent
// calls.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
