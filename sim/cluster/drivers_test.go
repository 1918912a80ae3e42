package cluster

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/trace"
)

// Two mock drivers in one cluster: each registers its node plugin on
// every node, gets its own sidecars and proxies, its calls say its name,
// and a fault names the driver it hits.
func TestTwoDrivers(t *testing.T) {
	ctx := context.Background()
	const other = "shares.example.com"
	c, err := Start(ctx, Config{Nodes: nodeNames(2), Mock: true, Seed: 1, ExtraDrivers: []DriverConfig{{DriverName: other, Mock: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, want := c.DriverNames(), []string{"hostpath.csisim.io", other}; !slices.Equal(got, want) {
		t.Errorf("drivers %v, want %v", got, want)
	}
	if info, ok := c.DriverInfoOf(other); !ok || info.Name != other {
		t.Errorf("what %s said of itself: %+v, %v", other, info, ok)
	}
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	for _, node := range nodeNames(2) {
		cn, err := cs.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range cn.Spec.Drivers {
			names = append(names, d.Name)
		}
		if want := []string{"hostpath.csisim.io", other}; !slices.Equal(names, want) {
			t.Errorf("CSINode %s lists %v, want %v", node, names, want)
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ids map[string]string
		if err := json.Unmarshal([]byte(n.Annotations["csi.volume.kubernetes.io/nodeid"]), &ids); err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"hostpath.csisim.io": node, other: node}; len(ids) != 2 || ids["hostpath.csisim.io"] != node || ids[other] != node {
			t.Errorf("node %s's nodeid annotation %v, want %v", node, ids, want)
		}
	}
	// Each driver's sidecars asked their own driver at start.
	asked := map[string]int{}
	for _, e := range c.CSICalls() {
		if e.Driver == "" {
			t.Errorf("a call of a cluster of two drivers says no driver: %s", e)
		}
		if e.Actor == "external-provisioner" && e.Verb == "GetPluginInfo" {
			asked[e.Driver]++
		}
	}
	if asked["hostpath.csisim.io"] != 1 || asked[other] != 1 {
		t.Errorf("the external-provisioners asked GetPluginInfo of %v, want once of each", asked)
	}

	if err := c.CanInject(fault.Fault{Kind: fault.CSIError, CSI: fault.CSI{Method: "CreateVolume"}, Driver: "nfs.example.com"}); err == nil ||
		!strings.Contains(err.Error(), `there is no driver "nfs.example.com" in this cluster`) {
		t.Errorf("a fault on a driver the cluster does not run: %v", err)
	}
	if err := c.CanInject(fault.Fault{Kind: fault.SidecarRestart, Component: "external-attacher", Driver: other}); err != nil {
		t.Errorf("restarting the other driver's attacher: %v", err)
	}
	if err := c.InjectFault(ctx, fault.Fault{Kind: fault.CSIError, CSI: fault.CSI{Method: "CreateVolume", Code: codes.Internal}, Driver: other}); err != nil {
		t.Fatal(err)
	}
	entries := c.Recorder().Entries()
	last := entries[len(entries)-1]
	if last.Kind != trace.Fault || !strings.Contains(last.Detail, "controller plugin of "+other) || strings.Contains(last.Detail, "controller plugin,") {
		t.Errorf("the fault is on %q, want the plugins of %s alone", last.Detail, other)
	}
	if err := c.InjectFault(ctx, fault.Fault{Kind: fault.SidecarRestart, Component: "external-provisioner", Driver: other}); err != nil {
		t.Fatal(err)
	}
	if !c.components.isRunning("external-provisioner") || !c.components.isRunning("external-provisioner/"+other) {
		t.Error("a sidecar of either driver is not running after the restart")
	}
}

// A cluster of one driver records no driver in its CSI entries, so its
// timeline reads as it always did.
func TestOneDriverRecordsNoDriverName(t *testing.T) {
	c, err := Start(context.Background(), Config{Mock: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, e := range c.CSICalls() {
		if e.Driver != "" {
			t.Fatalf("%s names its driver", e)
		}
	}
}

func TestExtraDriversRefused(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Mock: true, ExtraDrivers: []DriverConfig{{Mock: true}}}, "extra driver 1: it needs a name of its own"},
		{Config{Mock: true, ExtraDrivers: []DriverConfig{{Mock: true, DriverName: "hostpath.csisim.io"}}}, "runs a driver named hostpath.csisim.io already"},
		{Config{Mock: true, ExtraDrivers: []DriverConfig{{Mock: true, DriverName: "b", Layout: "zigzag"}}}, `extra driver b: driver layout "zigzag"`},
	} {
		if _, err := Start(context.Background(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg.ExtraDrivers, err, tc.want)
		}
	}
}
