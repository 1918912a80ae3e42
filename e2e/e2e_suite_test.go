//go:build e2e

// Package e2e runs the scenario library against a real cluster: the one in
// -kubeconfig (default $KUBECONFIG), with csisim's driver deployed under
// the name hostpath.csisim.io. Build tag e2e keeps it out of `go test ./...`:
//
//	make e2e KUBECONFIG=~/.kube/config
//
// Steps that need what only the simulator sees (CSI call assertions) are
// skipped on a real cluster and reported as such. On a kind cluster made by
// e2e/kind/run.sh (-kind-cluster, default $CSISIM_KIND_CLUSTER), fault
// steps are injected through e2e/kind/faults; those it cannot inject, and
// every fault step on another cluster, are skipped the same way.
//
// With -here (make e2e-here) there is no cluster to be given: each
// scenario named in -scenarios runs on a real cluster started here for
// it — the real control plane v1.37.2 with every node of the scenario a
// real kubelet and containerd (package realnodes), csisim's driver beside
// them — which also injects the scenario's faults and sees its CSI calls.
// The suite checks that the machine is left as it was found.
package e2e

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/csisim/csisim/deploy"
	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/e2e/kind/faults"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/realnodes"
	"github.com/csisim/csisim/scenarios"
)

var (
	kubeconfig  = flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to run the scenarios on")
	kindCluster = flag.String("kind-cluster", os.Getenv("CSISIM_KIND_CLUSTER"), "name of the kind cluster, to inject faults into it")
	here        = flag.Bool("here", false, "run each scenario on a real cluster with real nodes started on this machine (make e2e-here)")
	hereOnly    = flag.String("scenarios", "", "the library scenarios to run, by name, space- or comma-separated (default all)")
	kindReport  = flag.String("kind-report", "", "write a Markdown table of each scenario's outcome (passed, skipped and why, failed) to this file")
	csisimBin   = flag.String("csisim", "", "with -here: the csisim binary that runs the driver (csisim-workload beside it)")
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Scenario library on a real cluster")
}

// clusterBackend is a real cluster reached through a kubeconfig.
type clusterBackend struct{ cfg *rest.Config }

func (b clusterBackend) RESTConfig() *rest.Config { return b.cfg }

// kindBackend is a kind cluster: a clusterBackend that injects faults.
type kindBackend struct {
	clusterBackend
	*faults.Kind
}

// AdaptManifest runs every pod's containers as csisim's workload image,
// which run.sh loads into the kind nodes, as the real nodes of realcluster
// do (realnodes.WorkloadPod): the scenarios' `image: busybox` without a
// command exits at once on a real node (its entrypoint is sh), and its
// containers would restart for ever, where the simulator's keep running
// and check the volume's data.
func (kindBackend) AdaptManifest(obj *unstructured.Unstructured) error {
	return realnodes.WorkloadPod(obj)
}

var backend scenarios.Backend

// deployed is the driver the scenarios run with on a cluster it is
// deployed to: deploy.DeployedProfile, and on a kind cluster of this
// machine what this machine allows (kindLimits).
var deployed *profile.Profile

// kindLimits takes out of p what no container on this machine can do, a
// kind node being one: without CAP_SYS_RESOURCE in this process's bounding
// set (these VMs lack it; e2e/kind/runc-no-sys-resource.sh drops it from
// every container), nothing here can grow a mounted ext4 file system
// (EXT4_IOC_RESIZE_FS), so the online expansion of a mounted volume fails
// on the driver's NodeExpandVolume whatever csisim does.
func kindLimits(p *profile.Profile) error {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(status), "\n") {
		hex, ok := strings.CutPrefix(line, "CapBnd:")
		if !ok {
			continue
		}
		bnd, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return fmt.Errorf("/proc/self/status %q: %w", line, err)
		}
		if bnd&(1<<unix.CAP_SYS_RESOURCE) == 0 {
			p.NotSupported = maps.Clone(p.NotSupported)
			if p.NotSupported == nil {
				p.NotSupported = map[string]string{}
			}
			p.NotSupported["expansion-online"] = "this machine lacks CAP_SYS_RESOURCE, which growing a mounted ext4 file system needs (EXT4_IOC_RESIZE_FS), so no kind node here can have it"
		}
		return nil
	}
	return errors.New("/proc/self/status has no CapBnd line")
}

var _ scenarios.ManifestAdapter = kindBackend{}

var _ fault.Injector = kindBackend{}

var _ scenarios.FaultUndoer = kindBackend{}

var _ = BeforeSuite(func() {
	if *here {
		return
	}
	Expect(*kubeconfig).NotTo(BeEmpty(), "set -kubeconfig or KUBECONFIG to the cluster to test")
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	cfg.UserAgent = "csisim-e2e"
	// A scenario's waits poll every object they watch; at client-go's
	// default 5 requests a second they wait on the rate limiter instead
	// (a kind run's waits timed out "client rate limiter Wait returned an
	// error"). The real control plane's clients are unthrottled likewise
	// (realcluster).
	cfg.QPS, cfg.Burst = 1000, 2000
	backend = clusterBackend{cfg: cfg}
	deployed = deploy.DeployedProfile()
	if *kindCluster != "" {
		Expect(kindLimits(deployed)).To(Succeed())
		client, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		k := faults.NewKind(faults.KindConfig{Cluster: *kindCluster}, client)
		k.Log = GinkgoWriter
		backend = kindBackend{clusterBackend: clusterBackend{cfg: cfg}, Kind: k}
	}
})

var _ = Describe("the scenario library", func() {
	files, _ := filepath.Glob("../scenarios/library/*.yaml")
	var chosen []string
	if *hereOnly != "" {
		chosen = strings.FieldsFunc(*hereOnly, func(r rune) bool { return r == ' ' || r == ',' })
	}
	if *here {
		describeHere(files, chosen)
		return
	}
	describeCluster(files, chosen)
})
