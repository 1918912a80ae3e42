package invariant_test

// Each invariant catches a deliberately broken behaviour, and no other
// invariant does. The simulator runs csisim's own driver (real mounts; the
// tests need root) behind a fault proxy: the cluster's driver command is
// this test binary, which, when it finds brokenEnv set, serves the fault
// proxy on the plugin's endpoint in front of csisim's driver on a socket
// beside it (see brokenDriverMain).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/drivers/faultproxy"
	"github.com/csisim/csisim/drivers/hostpath"
	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/invariant"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/workload"
)

// brokenEnv holds, for a driver process this test binary runs, the node
// whose plugin misbehaves ("*" for every plugin, "controller" for the
// controller plugin) and the name of the fault proxy rules it misbehaves
// by (a key of brokenRules, "" for none): "NODE|RULES".
const brokenEnv = "CSISIM_INVARIANT_BROKEN_DRIVER"

// brokenRules are the ways a driver misbehaves, by name.
var brokenRules = map[string][]faultproxy.Rule{
	"": nil,
	// The node plugin answers its first NodeGetInfo with another node's
	// ID ("node-2"), as a DaemonSet with a hard-coded node ID would.
	wrongNodeID: {{Method: "NodeGetInfo", Times: 1,
		Action: faultproxy.Action{Kind: faultproxy.ActionOK, Response: &csi.NodeGetInfoResponse{NodeId: "node-2"}}}},
	// NodeUnstageVolume answers OK without asking the driver, which keeps
	// the volume staged.
	unstageOK: {{Method: "NodeUnstageVolume", Action: faultproxy.Action{Kind: faultproxy.ActionOK}}},
	// The first NodeGetCapabilities answers none (an empty answer, without
	// asking the driver), later ones what the driver has.
	firstCapabilitiesEmpty: {{Method: "NodeGetCapabilities", Times: 1, Action: faultproxy.Action{Kind: faultproxy.ActionOK}}},
	// The second CreateVolume answers with a volume of its own making, as
	// a driver that makes a new volume for every call, whatever its name.
	createNotIdempotent: {{Method: "CreateVolume", Nth: 2, Times: 1, Action: faultproxy.Action{Kind: faultproxy.ActionOK,
		Response: &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-made-again", CapacityBytes: 1 << 30}}}}},
}

const (
	wrongNodeID            = "wrong-node-id"
	unstageOK              = "unstage-ok"
	firstCapabilitiesEmpty = "first-capabilities-empty"
	createNotIdempotent    = "create-not-idempotent"
)

func TestMain(m *testing.M) {
	if spec, ok := os.LookupEnv(brokenEnv); ok {
		os.Exit(brokenDriverMain(spec, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// brokenDriverMain runs csisim's driver behind a fault proxy. args are the
// driver's flags as brokenTemplate passes them.
func brokenDriverMain(spec string, args []string) int {
	who, rulesName, _ := strings.Cut(spec, "|")
	var endpoint, nodeID string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--endpoint":
			endpoint = args[i+1]
		case "--node-id":
			nodeID = args[i+1]
		}
	}
	mode := "node"
	if nodeID == "controller" {
		mode = "controller"
	}
	inner := endpoint + ".driver"
	driverArgs := slices.Clone(args)
	driverArgs[slices.Index(driverArgs, "--endpoint")+1] = inner
	driverArgs = append(driverArgs, "--mode", mode)

	rules, ok := brokenRules[rulesName]
	if !ok {
		fmt.Fprintf(os.Stderr, "broken driver: no rules named %q\n", rulesName)
		return 2
	}
	if who != "*" && who != nodeID {
		rules = nil
	}
	p, err := faultproxy.Start(context.Background(), faultproxy.Config{Name: "broken-" + nodeID, Listen: endpoint, Target: inner, Rules: rules})
	if err != nil {
		fmt.Fprintf(os.Stderr, "broken driver: %v\n", err)
		return 1
	}
	defer p.Stop()
	return hostpath.Main(driverArgs, os.Stdout, os.Stderr)
}

// runBroken runs scenario yaml on a simulated cluster whose driver
// misbehaves as spec says, and returns the invariants it violated.
// afterStep, if not nil, is called after each step; its error fails the
// test.
func runBroken(t *testing.T, spec, yaml string, afterStep func(*cluster.Cluster, scenarios.StepResult) error) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the broken-driver tests run csisim's driver, which mounts: run them as root")
	}
	sc, err := scenarios.Parse("broken.yaml", []byte(yaml), "../scenarios/library")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{Nodes: sc.Cluster.Nodes, Seed: 1, Driver: launch.Template{Path: self,
		Args: []string{"--endpoint", "{endpoint}", "--node-id", "{nodeID}", "--root", "{root}", "--state-dir", "{stateDir}"},
		Env:  []string{brokenEnv + "=" + spec}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	runner := &scenarios.Runner{Backend: c, Recorder: c.Recorder(), Clock: c.Clock()}
	if afterStep != nil {
		runner.AfterStep = func(_ context.Context, st scenarios.StepResult) {
			if err := afterStep(c, st); err != nil {
				t.Errorf("after step %d (%s): %v", st.Step, st.Name, err)
			}
		}
	}
	res, err := runner.Run(ctx, sc)
	var invErr *scenarios.InvariantError
	if err != nil && !errors.As(err, &invErr) {
		t.Fatalf("the scenario failed before the invariants: %v\n%s", err, timeline(c))
	}
	if res.Invariants == nil {
		t.Fatal("the invariants were not checked")
	}
	var names []string
	for _, v := range res.Invariants.Violations {
		t.Logf("INVARIANT %s violated: %s", v.Invariant, v.Message)
		names = append(names, v.Invariant)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func timeline(c *cluster.Cluster) string {
	var b strings.Builder
	for _, e := range c.Recorder().Entries() {
		b.WriteString(e.String() + "\n")
	}
	return b.String()
}

// expectOnly checks that exactly invariant name was violated.
func expectOnly(t *testing.T, got []string, name string) {
	t.Helper()
	if !invariant.Known(name) {
		t.Fatalf("%q is not an invariant", name)
	}
	if !slices.Equal(got, []string{name}) {
		t.Fatalf("violated %v, want exactly [%s]", got, name)
	}
}

// lifecycle is one claim, a pod using it, both deleted: basic-lifecycle.
const lifecycle = `
cluster: {nodes: [node-1]}
steps:
  - apply: {file: manifests/driver.yaml}
  - apply:
      manifest: |
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        spec: {accessModes: [ReadWriteOnce], storageClassName: '${driver.storageClass}', resources: {requests: {storage: 1Gi}}}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: app}
        spec:
          nodeName: node-1
          containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
          volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
  - wait: {object: pod/app, jsonPath: '{.status.phase}', equals: Running, timeout: 60s}
  - delete: {object: pod/app}
  - wait: {object: pod/app, gone: true, timeout: 60s}
  - delete: {object: pvc/data}
  - wait: {object: pvc/data, gone: true, timeout: 60s}
`

func TestBrokenDriverHealthy(t *testing.T) {
	// The harness itself breaks nothing.
	if got := runBroken(t, "*|", lifecycle, nil); len(got) > 0 {
		t.Fatalf("a driver with no rules violated %v", got)
	}
}

func TestBrokenNodeUnstageLeaksTheMount(t *testing.T) {
	expectOnly(t, runBroken(t, "node-1|"+unstageOK, lifecycle, nil), "nothing-leaked")
}

func TestBrokenStorageLosesTheData(t *testing.T) {
	// Between the two pods the driver's storage loses the volume's files
	// (a backend that does not keep what was written): the second pod
	// does not find the first one's marker. No proxy rule can lose data
	// on csisim's driver, which refuses to publish what it has not
	// staged, so the test empties the volume's directory in the driver's
	// storage root itself.
	wiped := false
	wipe := func(c *cluster.Cluster, st scenarios.StepResult) error {
		if st.Step != 5 { // wait: pod/first gone
			return nil
		}
		wiped = true
		vols, err := filepath.Glob(filepath.Join(c.Root(), "storage", "volumes", "*", workload.Dir))
		if err != nil || len(vols) != 1 {
			return fmt.Errorf("finding the volume's markers in the driver's storage: %v %v", vols, err)
		}
		return os.RemoveAll(vols[0])
	}
	expectOnly(t, runBroken(t, "*|", `
cluster: {nodes: [node-1]}
steps:
  - apply: {file: manifests/driver.yaml}
  - apply:
      manifest: |
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        spec: {accessModes: [ReadWriteOnce], storageClassName: '${driver.storageClass}', resources: {requests: {storage: 1Gi}}}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: first}
        spec:
          containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
          volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
  - wait: {object: pod/first, jsonPath: '{.status.phase}', equals: Running, timeout: 60s}
  - delete: {object: pod/first}
  - wait: {object: pod/first, gone: true, timeout: 60s}
  - sleep: 30s
  - apply:
      manifest: |
        apiVersion: v1
        kind: Pod
        metadata: {name: second}
        spec:
          containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
          volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
  - wait: {object: pod/second, jsonPath: '{.status.phase}', equals: Running, timeout: 60s}
  - delete: {object: pod/second}
  - wait: {object: pod/second, gone: true, timeout: 60s}
  - delete: {object: pvc/data}
  - wait: {object: pvc/data, gone: true, timeout: 60s}
`, wipe), "data-durability")
	if !wiped {
		t.Fatal("the test did not empty the volume")
	}
}

func TestBrokenNodeIDIsRefusedAtStart(t *testing.T) {
	// node-1's plugin says it is node-2, as node-2's does: the attachments
	// of both would go to one of them (the invariant
	// attach-matches-attachment, whose own tests cover it, would name the
	// publishes). The simulated cluster does not get that far: it refuses
	// to start, naming the nodes and the fix.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{Nodes: []string{"node-1", "node-2"}, Seed: 1, Driver: launch.Template{Path: self,
		Args: []string{"--endpoint", "{endpoint}", "--node-id", "{nodeID}", "--root", "{root}", "--state-dir", "{stateDir}"},
		Env:  []string{brokenEnv + "=node-1|" + wrongNodeID}}})
	if err == nil {
		_ = c.Close()
		t.Fatal("a cluster whose node plugins share a node ID started")
	}
	for _, want := range []string{"node-1, node-2", `node_id "node-2"`, "{nodeID}"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

// twoPods applies a claim with access mode mode and two pods using it, on
// the nodes given (the scheduler is bypassed, as with spec.nodeName set by
// hand or by an operator), and waits for both to run; csiDriver is the
// CSIDriver's spec.
func twoPods(mode, csiDriver, node1, node2 string) string {
	return fmt.Sprintf(`
cluster: {nodes: [node-1, node-2]}
steps:
  - apply:
      manifest: |
        apiVersion: storage.k8s.io/v1
        kind: CSIDriver
        metadata: {name: hostpath.csisim.io}
        spec: %s
        ---
        apiVersion: storage.k8s.io/v1
        kind: StorageClass
        metadata: {name: csisim-sc}
        provisioner: hostpath.csisim.io
        reclaimPolicy: Delete
        volumeBindingMode: Immediate
  - apply:
      manifest: |
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        spec: {accessModes: [%s], storageClassName: csisim-sc, resources: {requests: {storage: 1Gi}}}
  - wait: {object: pvc/data, jsonPath: '{.status.phase}', equals: Bound, timeout: 30s}
  - apply:
      manifest: |
        apiVersion: v1
        kind: Pod
        metadata: {name: one}
        spec:
          nodeName: %s
          containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
          volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: two}
        spec:
          nodeName: %s
          containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
          volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
  - wait: {object: pod/one, jsonPath: '{.status.phase}', equals: Running, timeout: 60s}
  - wait: {object: pod/two, jsonPath: '{.status.phase}', equals: Running, timeout: 60s}
  - delete: {object: pod/one}
  - delete: {object: pod/two}
  - wait: {object: pod/one, gone: true, timeout: 60s}
  - wait: {object: pod/two, gone: true, timeout: 60s}
  - delete: {object: pvc/data}
  - wait: {object: pvc/data, gone: true, timeout: 60s}
`, csiDriver, mode, node1, node2)
}

func TestBrokenAttachNotRequiredPublishesOnTwoNodes(t *testing.T) {
	// A driver that says attachRequired: false for ReadWriteOnce volumes
	// leaves nothing to stop a second node (only the attach/detach
	// controller refuses a second attachment): both nodes publish it.
	expectOnly(t, runBroken(t, "*|", twoPods("ReadWriteOnce", "{attachRequired: false}", "node-1", "node-2"), nil), "rwo-single-node")
}

func TestBrokenReadWriteOncePodOnTwoPods(t *testing.T) {
	// Two pods bound by hand to two nodes (the scheduler would keep the
	// second away) on a driver that needs no attach: no attach/detach
	// controller refuses the second node, and each kubelet checks only
	// the pods on its own node (it refuses a second pod on the same
	// node, before any CSI call), so both pods get the volume.
	got := runBroken(t, "*|", twoPods("ReadWriteOncePod", "{attachRequired: false}", "node-1", "node-2"), nil)
	if !slices.Contains(got, "rwop-single-pod") {
		t.Fatalf("violated %v, want rwop-single-pod among them", got)
	}
}

func TestBrokenInlineVolumeRunsUnset(t *testing.T) {
	// The kubelet refuses the inline csi: volume (its CSIDriver lists
	// Persistent only) and never publishes it; something else reports
	// the pod Running all the same — as csisim's kubelet did before it
	// learned inline volumes. No proxy rule can make the kubelet do that,
	// so the test writes the status itself, once the refusal is seen.
	reported := false
	green := func(c *cluster.Cluster, st scenarios.StepResult) error {
		if st.Step != 2 { // wait: the FailedMount event
			return nil
		}
		reported = true
		cs, err := kubernetes.NewForConfig(c.RESTConfig())
		if err != nil {
			return err
		}
		ctx := context.Background()
		pod, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Status.Phase = corev1.PodRunning
		_, err = cs.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	}
	expectOnly(t, runBroken(t, "*|", `
cluster: {nodes: [node-1]}
steps:
  - apply:
      manifest: |
        apiVersion: storage.k8s.io/v1
        kind: CSIDriver
        metadata: {name: hostpath.csisim.io}
        spec: {attachRequired: true, volumeLifecycleModes: [Persistent]}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: app}
        spec:
          containers: [{name: app, image: busybox, volumeMounts: [{name: scratch, mountPath: /scratch}]}]
          volumes: [{name: scratch, csi: {driver: hostpath.csisim.io}}]
  - wait: {object: events, jsonPath: '{.items[?(@.reason=="FailedMount")].reason}', equals: FailedMount, timeout: 60s}
  - delete: {object: pod/app}
  - wait: {object: pod/app, gone: true, timeout: 60s}
`, green), "pod-volumes-set-up")
	if !reported {
		t.Error("the pod was never reported Running")
	}
}

func TestBrokenCapabilitiesPublishBeforeStage(t *testing.T) {
	// The node plugin's first NodeGetCapabilities answers none (an empty
	// answer, without asking the driver), later ones STAGE_UNSTAGE_VOLUME:
	// the kubelet publishes before it stages.
	expectOnly(t, runBroken(t, "node-1|"+firstCapabilitiesEmpty, lifecycle, nil), "csi-call-order")
}

// A leak: the driver makes the volume, its answer is lost, every later
// CreateVolume fails with a final error, and the claim is deleted. The
// provisioner forgets a claim after a final error, as the real one does,
// so nobody deletes the volume the first call made: only no-leaked-volume,
// which counts the answer the caller never heard, sees it.
func TestBrokenDriverLeakedVolume(t *testing.T) {
	expectOnly(t, runBroken(t, "*|", `
cluster: {nodes: [node-1]}
steps:
  - apply: {file: manifests/driver.yaml}
  - csiLostAnswer: {method: CreateVolume, times: 1}
  - csiError: {method: CreateVolume, code: Internal, message: backend confused}
  - apply:
      manifest: |
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        spec: {accessModes: [ReadWriteOnce], storageClassName: '${driver.storageClass}', resources: {requests: {storage: 1Gi}}}
  - sleep: 15s
  - delete: {object: pvc/data}
  - wait: {object: pvc/data, gone: true, timeout: 60s}
  - sleep: 1m
`, nil), "no-leaked-volume")
}

// A driver that is not idempotent: the provisioner's retry after a lost
// answer gets a second volume. idempotent-retry names the fault; the first
// volume, which nobody asks for again, is left behind, which
// no-leaked-volume reports as its consequence.
func TestBrokenDriverNotIdempotent(t *testing.T) {
	got := runBroken(t, "controller|"+createNotIdempotent, `
cluster: {nodes: [node-1]}
steps:
  - apply: {file: manifests/driver.yaml}
  - csiLostAnswer: {method: CreateVolume, times: 1}
  - apply:
      manifest: |
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        spec: {accessModes: [ReadWriteOnce], storageClassName: '${driver.storageClass}', resources: {requests: {storage: 1Gi}}}
  - wait: {object: pvc/data, jsonPath: '{.status.phase}', equals: Bound, timeout: 60s}
`, nil)
	if want := []string{"idempotent-retry", "no-leaked-volume"}; !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Fatalf("violated %v, want exactly %v", got, want)
	}
}
