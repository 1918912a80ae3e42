//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/realcluster"
	"github.com/csisim/csisim/realnodes"
	"github.com/csisim/csisim/scenarios"
)

// describeHere runs the chosen scenarios each on a real cluster of its own
// with real nodes, and checks the machine's footprint before and after.
func describeHere(files, chosen []string) {
	Describe("on real nodes started here", Ordered, ContinueOnFailure, func() { hereSpecs(files, chosen) })
}

func hereSpecs(files, chosen []string) {
	var before realnodes.Footprint
	BeforeAll(func() {
		var err error
		before, err = realnodes.TakeFootprint()
		Expect(err).NotTo(HaveOccurred())
	})
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		if chosen != nil && !slices.Contains(chosen, name) {
			continue
		}
		It("passes on a real cluster with real nodes: "+name, func() {
			sc, err := scenarios.Load(file)
			Expect(err).NotTo(HaveOccurred())
			if len(sc.Drivers) > 0 {
				Skip("it runs CSI drivers beside the one under test (drivers:): a real cluster here is deployed with one driver")
			}
			nodes := sc.Cluster.Nodes
			if len(nodes) == 0 {
				nodes = []string{"node-1"}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			c, err := realcluster.Start(ctx, realcluster.Config{Nodes: nodes, Zones: sc.Cluster.Zones, DriverArgs: sc.Cluster.DriverFlags(profiles.MustDefault()), DriverName: sc.Cluster.DriverName,
				RealNodes: nodes, DriverBinary: *csisimBin, Log: GinkgoWriter, HealthMonitor: sc.Cluster.HealthMonitor})
			Expect(err).NotTo(HaveOccurred())
			defer func() { Expect(c.Close()).To(Succeed()) }()
			runner := &scenarios.Runner{Backend: c, Recorder: c.Recorder(), Out: GinkgoWriter}
			res, err := runner.Run(ctx, sc)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Failed()).To(BeFalse())
		})
	}
	AfterAll(func() {
		// A process killed during teardown (a runc shim) may take a moment
		// to go; what is still there after 20 s was left behind.
		Eventually(func() ([]string, error) {
			after, err := realnodes.TakeFootprint()
			if err != nil {
				return nil, err
			}
			return before.Diff(after), nil
		}, 20*time.Second, time.Second).Should(BeEmpty(), "the real clusters left the machine changed")
	})
}
