package fidelity

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/csisim/csisim/scenarios"
)

// sharedCluster is a real control plane with a driver deployed and two
// workers (Node objects, no kubelets), as a kind cluster is to the
// scenarios: its workers are named otherwise than the scenarios' nodes.
type sharedCluster struct{ cfg *rest.Config }

func (c sharedCluster) RESTConfig() *rest.Config { return c.cfg }

func (c sharedCluster) Workers(context.Context) ([]scenarios.Worker, error) {
	return []scenarios.Worker{{Name: "kind-worker", Zone: "zone-a"}, {Name: "kind-worker2", Zone: "zone-b"}}, nil
}

// TestSharedClusterRunOnTheRealServer runs scenarios as the e2e suite
// runs them on a kind cluster (SkipUnsupported, Restore) against a real
// kube-apiserver: the scenario's node-2 is the second worker; a CSIDriver
// that changes the deployed one's immutable field is skipped before
// anything changes, where the server would refuse it; what a scenario
// made or changed outside its namespace is put back as it was.
func TestSharedClusterRunOnTheRealServer(t *testing.T) {
	c := startControlPlane(t, "shared-cluster")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	deploy(ctx, t, cs)
	backend := sharedCluster{cfg: c.RESTConfig()}

	// The deployed CSIDriver attaches: a scenario's that does not cannot
	// be applied over it.
	refused := parse(t, `cluster: {nodes: [node-1]}
steps:
  - apply:
      manifest: |
        {apiVersion: storage.k8s.io/v1, kind: CSIDriver, metadata: {name: hostpath.csisim.io}, spec: {attachRequired: false, volumeLifecycleModes: [Persistent, Ephemeral]}}
`)
	res, err := (&scenarios.Runner{Backend: backend, SkipUnsupported: true, Restore: true}).Run(ctx, refused)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Skipped, "spec.attachRequired false where the cluster's has true") {
		t.Errorf("Skipped = %q, want the immutable attachRequired named", res.Skipped)
	}
	// What the server says to that change, for the record: it refuses it.
	d, err := cs.StorageV1().CSIDrivers().Get(ctx, "hostpath.csisim.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.AttachRequired = new(bool)
	if _, err := cs.StorageV1().CSIDrivers().Update(ctx, d, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("the server took a change of attachRequired: %v", err)
	}

	changes := parse(t, `cluster: {nodes: [node-1, node-2], zones: {node-2: zone-b}}
steps:
  - apply:
      manifest: |
        {apiVersion: storage.k8s.io/v1, kind: CSIDriver, metadata: {name: hostpath.csisim.io}, spec: {attachRequired: true, podInfoOnMount: false, volumeLifecycleModes: [Persistent, Ephemeral]}}
        ---
        {apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: made-by-the-run}, provisioner: hostpath.csisim.io}
        ---
        {apiVersion: v1, kind: ConfigMap, metadata: {name: note}, data: {where: node-2}}
  - patch:
      object: node/node-2
      patch: {spec: {taints: [{key: dedicated, value: db, effect: NoSchedule}]}}
  - assert: {object: node/node-2, jsonPath: '{.spec.taints[0].key}', equals: dedicated}
  - assert: {object: configmap/note, jsonPath: '{.data.where}', equals: node-2}
  - delete: {object: storageclass/csisim-sc}
`)
	res, err = (&scenarios.Runner{Backend: backend, SkipUnsupported: true, Restore: true}).Run(ctx, changes)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed() {
		t.Fatalf("not passed: %+v", res.Steps)
	}
	d, err = cs.StorageV1().CSIDrivers().Get(ctx, "hostpath.csisim.io", metav1.GetOptions{})
	if err != nil || d.Spec.PodInfoOnMount == nil || !*d.Spec.PodInfoOnMount || d.Labels["app.kubernetes.io/part-of"] != "csisim" {
		t.Errorf("the deployed CSIDriver was not put back: %+v, %v", d, err)
	}
	if _, err := cs.StorageV1().StorageClasses().Get(ctx, "made-by-the-run", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the StorageClass the run made is still there: %v", err)
	}
	if _, err := cs.StorageV1().StorageClasses().Get(ctx, "csisim-sc", metav1.GetOptions{}); err != nil {
		t.Errorf("the deployed StorageClass the run deleted was not made again: %v", err)
	}
	// The run's taint must be gone; the node lifecycle controller's own
	// (node.kubernetes.io/not-ready: this Node has no kubelet) may come and
	// go meanwhile, and is none of the run's doing.
	n, err := cs.CoreV1().Nodes().Get(ctx, "kind-worker2", metav1.GetOptions{})
	if err != nil || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "dedicated" }) {
		t.Errorf("the worker's taint was not taken off: %+v, %v", n.Spec.Taints, err)
	}
}

func parse(t *testing.T, src string) *scenarios.Scenario {
	t.Helper()
	s, err := scenarios.Parse("shared.yaml", []byte("name: shared\n"+src), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// deploy makes what a deployed driver leaves on a cluster: its CSIDriver
// and StorageClass (as deploy/kubernetes), and two workers.
func deploy(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	yes := true
	labels := map[string]string{"app.kubernetes.io/part-of": "csisim"}
	if _, err := cs.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csisim.io", Labels: labels},
		Spec: storagev1.CSIDriverSpec{AttachRequired: &yes, PodInfoOnMount: &yes,
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: "csisim-sc", Labels: labels}, Provisioner: "hostpath.csisim.io",
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct{ name, zone string }{{"kind-worker", "zone-a"}, {"kind-worker2", "zone-b"}} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name,
			Labels: map[string]string{corev1.LabelHostname: n.name, corev1.LabelTopologyZone: n.zone}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
