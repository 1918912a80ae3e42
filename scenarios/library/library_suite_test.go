// The scenario library, run on the simulator: every scenario file must
// pass, and the basic lifecycle must make exactly the CSI calls Kubernetes
// makes, in the order it makes them, and leave nothing behind.
package library_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/internal/testenv"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/sim/clusterprofile"
	"github.com/csisim/csisim/trace"
)

func TestLibrary(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Scenario library on the simulator")
}

// csisimBinary is the csisim command, built once: the simulator starts the
// CSI driver as `csisim driver`, a process of its own.
var csisimBinary string

var _ = BeforeSuite(func() {
	var err error
	csisimBinary, err = testenv.BuildCsisim()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(testenv.Cleanup)
})

// lifecycleMethods are the CSI calls that change a volume's state; the
// informational ones (Probe, capabilities, GetPluginInfo…) are left out.
var lifecycleMethods = map[string]bool{
	"CreateVolume": true, "DeleteVolume": true, "ControllerPublishVolume": true, "ControllerUnpublishVolume": true,
	"NodeStageVolume": true, "NodeUnstageVolume": true, "NodePublishVolume": true, "NodeUnpublishVolume": true,
}

func lifecycleCalls(entries []trace.Entry) []string {
	var out []string
	for _, e := range entries {
		if lifecycleMethods[e.Verb] && e.Err == "" {
			out = append(out, e.Verb)
		}
	}
	return out
}

// runOnSimulator starts a cluster for sc, runs it and tears the cluster
// down, returning the result, the run error and the run's root directory.
func runOnSimulator(sc *scenarios.Scenario) (*scenarios.Result, *trace.Recorder, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The cluster csisim run would start for the scenario with csisim's
	// own driver: the profile's configuration, the scenario's other drivers
	// and the driver's own manifests (cluster.deploy).
	prof := profiles.MustDefault()
	cfg, err := clusterprofile.Config(ctx, prof, sc.Cluster.Request(), clusterprofile.Options{DriverName: sc.Cluster.DriverName})
	Expect(err).NotTo(HaveOccurred())
	Expect(clusterprofile.AddDrivers(ctx, &cfg, sc.Drivers, sc.Cluster.Request(), clusterprofile.Options{})).To(Succeed())
	if sc.Cluster.Deploy != "" {
		Expect(clusterprofile.Deploy(&cfg, prof, sc.Cluster.Deploy, GinkgoWriter)).To(Succeed())
	}
	cfg.DriverBinary, cfg.Seed, cfg.DriverLog, cfg.Timing = csisimBinary, 1, GinkgoWriter, sc.Cluster.Timing
	c, err := cluster.Start(ctx, cfg)
	Expect(err).NotTo(HaveOccurred())
	root := c.Root()
	res, runErr := (&scenarios.Runner{Backend: c, Recorder: c.Recorder(), Clock: c.Clock(), Out: GinkgoWriter}).Run(ctx, sc)
	Expect(c.Close()).To(Succeed())
	return res, c.Recorder(), root, runErr
}

// expectNothingLeft checks that a run's mounts and files are gone.
func expectNothingLeft(root string) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	Expect(err).NotTo(HaveOccurred())
	Expect(string(mounts)).NotTo(ContainSubstring(root), "a mount of the run is left behind")
	_, err = os.Stat(root)
	Expect(os.IsNotExist(err)).To(BeTrue(), "the run's root %s is left behind", root)
}

var _ = Describe("every scenario in the library", func() {
	files, _ := filepath.Glob("*.yaml")
	for _, file := range files {
		It("passes: "+file, func() {
			sc, err := scenarios.Load(file)
			Expect(err).NotTo(HaveOccurred())
			res, _, root, runErr := runOnSimulator(sc)
			// An invariant the scenario does not expect to break fails
			// it here, with the INVARIANT lines.
			Expect(runErr).NotTo(HaveOccurred())
			Expect(res.Passed()).To(BeTrue())
			Expect(res.Invariants).NotTo(BeNil(), "the invariants were not checked")
			expectNothingLeft(root)
		})
	}
})

var _ = Describe("basic-lifecycle", func() {
	It("makes the CSI calls of the real volume lifecycle, in order", func() {
		sc, err := scenarios.Load("basic-lifecycle.yaml")
		Expect(err).NotTo(HaveOccurred())
		_, rec, _, runErr := runOnSimulator(sc)
		Expect(runErr).NotTo(HaveOccurred())
		Expect(lifecycleCalls(rec.Filter(trace.CSI))).To(Equal([]string{
			"CreateVolume", "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume",
			"NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume", "DeleteVolume",
		}))
	})

	It("writes the objects' names, annotations and finalizers as Kubernetes does", func() {
		sc, err := scenarios.Load("basic-lifecycle.yaml")
		Expect(err).NotTo(HaveOccurred())
		_, rec, _, runErr := runOnSimulator(sc)
		Expect(runErr).NotTo(HaveOccurred())
		api := rec.Filter(trace.API)
		Expect(api).To(ContainElement(SatisfyAll(
			HaveField("Actor", "external-provisioner"), HaveField("Verb", "create"),
			HaveField("Object", MatchRegexp(`^PersistentVolume pvc-[0-9a-f-]{36}$`)),
			HaveField("Detail", ContainSubstring("external-provisioner.volume.kubernetes.io/finalizer,kubernetes.io/pv-protection")))))
		Expect(api).To(ContainElement(SatisfyAll(
			HaveField("Actor", "attachdetach-controller"), HaveField("Verb", "create"),
			HaveField("Object", MatchRegexp(`^VolumeAttachment csi-[0-9a-f]{64}$`)))))
		Expect(api).To(ContainElement(SatisfyAll(
			HaveField("Actor", "external-attacher"),
			HaveField("Detail", ContainSubstring("external-attacher/hostpath-csisim-io")))))
		// The kubelet deletes the pod only after unpublishing its volume.
		unpublish := indexOf(rec.Entries(), func(e trace.Entry) bool { return e.Verb == "NodeUnpublishVolume" })
		podGone := indexOf(rec.Entries(), func(e trace.Entry) bool {
			return e.Kind == trace.API && e.Object == "Pod default/app" && e.Detail == "removed"
		})
		Expect(unpublish).To(BeNumerically(">=", 0))
		Expect(podGone).To(BeNumerically(">", unpublish))
	})

	It("fails with the step, what was expected and what was seen, and still cleans up", func() {
		data, err := os.ReadFile("basic-lifecycle.yaml")
		Expect(err).NotTo(HaveOccurred())
		broken := strings.Replace(string(data), "equals: Running\n      timeout: 60s", "equals: Succeeded\n      timeout: 20s", 1)
		Expect(broken).NotTo(Equal(string(data)), "the scenario no longer has the step this test breaks")
		sc, err := scenarios.Parse("broken.yaml", []byte(broken), ".")
		Expect(err).NotTo(HaveOccurred())
		_, _, root, runErr := runOnSimulator(sc)
		var stepErr *scenarios.StepError
		Expect(errors.As(runErr, &stepErr)).To(BeTrue(), "got %v", runErr)
		Expect(stepErr.File).To(Equal("broken.yaml"))
		Expect(stepErr.Line).To(BeNumerically(">", 0))
		Expect(stepErr.Expected).To(ContainSubstring("Succeeded"))
		Expect(stepErr.Observed).To(ContainSubstring("Running"))
		expectNothingLeft(root)
	})
})

func indexOf(entries []trace.Entry, match func(trace.Entry) bool) int {
	for i, e := range entries {
		if match(e) {
			return i
		}
	}
	return -1
}

// The node-loss stories as `csisim diff --speedup 10` tells them: the
// cluster's node-loss timing and the scenarios' sleeps ten times shorter
// (Scenario.SpeedUp), so that a real control plane tells each in a few
// minutes. They must still pass, in a few minutes of cluster time.
var _ = Describe("the node-loss stories sped up ten times", func() {
	for _, name := range []string{"node-loss-force-detach", "node-loss-out-of-service", "classic-node-loss-story", "api-server-down-during-node-loss"} {
		It("pass in under five minutes of cluster time: "+name, func() {
			sc, err := scenarios.Load(name + ".yaml")
			Expect(err).NotTo(HaveOccurred())
			fast, err := sc.SpeedUp(10)
			Expect(err).NotTo(HaveOccurred())
			res, _, root, runErr := runOnSimulator(fast)
			Expect(runErr).NotTo(HaveOccurred())
			Expect(res.Passed()).To(BeTrue())
			Expect(res.Duration).To(BeNumerically("<", 5*time.Minute))
			expectNothingLeft(root)
		})
	}
})
