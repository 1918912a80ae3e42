package explain_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/explain"
	"github.com/csisim/csisim/internal/testenv"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/trace"
)

// The stuck states of the scenario library, run on the simulator up to
// the step where the object is stuck: the explanation, from the run's
// history and from the live cluster, must name the real cause.

// TestMain removes the csisim binary built for the scenarios that need
// the real driver (zones, capacity): the simulator starts it as `csisim
// driver`.
func TestMain(m *testing.M) { testenv.Main(m) }

// stuckRun is a library scenario cut after a step, and what explaining an
// object must then say.
type stuckRun struct {
	file string
	// through is the last step run, by number, and the start of its name
	// (a check that the scenario still has the step this test means).
	through int
	stepIs  string
	// realDriver: the scenario needs csisim's own driver (zones,
	// capacity), not the mock.
	realDriver bool
	target     string
	// want are substrings of the explanation, in order; liveWant, if
	// set, those of the explanation from the live cluster, which does not
	// know when removed objects went.
	want, liveWant []string
}

func TestLibraryStuckStates(t *testing.T) {
	runs := []stuckRun{
		{file: "wait-for-first-consumer", through: 3, stepIs: "assert persistentvolumes", realDriver: true, target: "pvc/data",
			want: []string{"PersistentVolumeClaim default/data: Pending (WaitForFirstConsumer)", "No pod uses the claim", "waiting for first consumer to be created before binding",
				"Next: Create a pod that uses the claim"}},
		{file: "wait-for-first-consumer", through: 13, stepIs: "wait pod/elsewhere", realDriver: true, target: "pod/elsewhere",
			want: []string{"Pod default/elsewhere: Pending, not scheduled", "didn't match PersistentVolume's node affinity",
				"PersistentVolume pvc-", "node affinity topology.hostpath.csisim.io/zone In [zone-b]", "can be used on only node-b"}},
		{file: "storage-capacity", through: 15, stepIs: "wait pod/three", realDriver: true, target: "pod/three",
			want: []string{"Pod default/three: Pending, not scheduled", "did not have enough free storage",
				"PersistentVolumeClaim default/three: Pending, needs 2Gi", "Capacity published: max volume 1Gi in topology.hostpath.csisim.io/node=node-a,topology.hostpath.csisim.io/zone=zone-a; max volume 1Gi in topology.hostpath.csisim.io/node=node-b,topology.hostpath.csisim.io/zone=zone-b"}},
		{file: "csidriver-name-mismatch", through: 7, stepIs: "sleep", target: "pvc/lost",
			want: []string{"PersistentVolumeClaim default/lost: Pending", "names the provisioner hostpath.csisim.oi", "Drivers seen: hostpath.csisim.io",
				"persistentvolume-controller ExternalProvisioning", "Did you mean hostpath.csisim.io?"}},
		{file: "kubelet-missing-driver", through: 6, stepIs: "sleep", target: "pod/app",
			want: []string{"Pod default/app: Pending", "kubelet FailedMount", "driver name missing.csi.example.com not found in the list of registered CSI drivers",
				"Node node-1: driver missing.csi.example.com not registered", "CSINode node-1 lists hostpath.csisim.io"}},
		{file: "node-plugin-missing", through: 10, stepIs: "assert pod/app", target: "pod/app",
			want: []string{"Pod default/app: Pending", "VolumeAttachment csi-", "not attached to node-b", "attachError (last 15s ago): CSINode node-b does not contain driver hostpath.csisim.io",
				"Node node-b: driver hostpath.csisim.io not registered", "lists no driver"}},
		{file: "pod-waiting-for-attach", through: 11, stepIs: "assert events", target: "pod/app",
			want: []string{"Pod default/app: Pending (ContainerCreating)", "timed out waiting for external-attacher of undeployed.csi.example.com CSI driver",
				"not attached to node-1", "No external-attacher has picked it up", "attachRequired: false"}},
		{file: "node-loss-force-detach", through: 14, stepIs: "wait events", target: "pod/app-0",
			want: []string{"Pod default/app-0: Pending", "Waiting for detach for volume", "VolumeAttachment csi-", "attached to node-a",
				"Node node-a is not Ready (Ready=Unknown", "forces the detach 6 min (maxWaitForUnmountDuration) after the last pod using the volume left node-a", "due in 6m0s",
				"Node node-a: Ready=Unknown"},
			liveWant: []string{"Pod default/app-0: Pending", "Waiting for detach for volume", "attached to node-a",
				"forces the detach 6 min (maxWaitForUnmountDuration) after the last pod using the volume left node-a; the snapshot does not say when that was"}},
		{file: "stale-volumeattachment-node-gone", through: 13, stepIs: "wait events", target: "pod/app-0",
			want: []string{"Pod default/app-0: Pending", "Waiting for detach for volume", "attached to node-a", "node node-a no longer exists", "due in 6m0s",
				"delete the VolumeAttachment"},
			liveWant: []string{"node node-a no longer exists", "the snapshot does not say when that was", "delete the VolumeAttachment"}},
		{file: "restore-from-unready-snapshot", through: 9, stepIs: "assert pvc/restored", realDriver: true, target: "pvc/restored",
			want: []string{"PersistentVolumeClaim default/restored: Pending", "The volume is made from VolumeSnapshot default/snap", "ProvisioningFailed", "snapshot snap not bound",
				"VolumeSnapshot default/snap: readyToUse=false", "its source claim data is not Bound", "the PVC data is not yet bound to a PV",
				"PersistentVolumeClaim default/data: Pending (WaitForFirstConsumer)", "No pod uses the claim"}},
		{file: "node-loss-force-detach", through: 11, stepIs: "assert pod/app-0", target: "pod/app-0",
			want: []string{"Pod default/app-0: Terminating (deletion requested 2m0s ago)", "Its node node-a is not Ready (Ready=Unknown", "keeps its volumes attached to node-a",
				"Next: If node-a is really down: kubectl delete pod app-0 --force, or taint the node node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"}},
		{file: "node-loss-force-detach", through: 8, stepIs: "wait node/node-a", target: "pod/app-0",
			want: []string{"Pod default/app-0: Running on node node-a (node not Ready)", "Its node node-a is not Ready (Ready=Unknown since 0s ago)",
				"marked the pod not Ready", "node.kubernetes.io/unreachable:NoExecute (added 0s ago), which the pod tolerates for 300 s",
				"the taint eviction controller deletes the pod in 5m0s", "Next: Once deleted, the pod stays Terminating", "Node node-a: Ready=Unknown"}},
		{file: "stale-volumeattachment", through: 15, stepIs: "assert pod/app", realDriver: true, target: "pod/app",
			want: []string{"Pod default/app: Pending", "not attached to node-b", "is published to node node-a",
				"attached to node-a", "unless it does not know this attachment", "Restart kube-controller-manager"}},
	}
	for _, r := range runs {
		t.Run(r.file+"/"+r.target, func(t *testing.T) {
			sc, err := scenarios.Load("../scenarios/library/" + r.file + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.Steps) < r.through || !strings.HasPrefix(sc.Steps[r.through-1].Name, r.stepIs) {
				t.Fatalf("%s: step %d is not %q any more: update this test", r.file, r.through, r.stepIs)
			}
			sc.Steps = sc.Steps[:r.through]
			sc.Finally = nil // the stuck state is explained before any clean-up
			cfg := cluster.Config{Nodes: sc.Cluster.Nodes, Zones: sc.Cluster.Zones, DriverArgs: sc.Cluster.DriverFlags(profiles.MustDefault()), DriverName: sc.Cluster.DriverName, Seed: 1}
			if r.realDriver {
				cfg.DriverBinary = testenv.CsisimBinary(t)
			} else {
				cfg.Mock = true
			}
			fromHistory, live := runStuck(t, sc, cfg, r.target)
			expectInOrder(t, "from the run's history", fromHistory, r.want)
			if r.liveWant == nil {
				r.liveWant = r.want
			}
			expectInOrder(t, "from the live cluster", live, r.liveWant)
		})
	}
}

// runStuck runs sc on a new simulated cluster and explains target at its
// end, from the history and from the cluster itself.
func runStuck(t *testing.T, sc *scenarios.Scenario, cfg cluster.Config, targetArg string) (fromHistory, live string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the cluster: %v", err)
		}
	}()
	// A run cut at its stuck point may leave what the nothing-leaked
	// invariant calls a leak: that is the point. Its steps must pass.
	_, err = (&scenarios.Runner{Backend: c, Recorder: c.Recorder(), Clock: c.Clock()}).Run(ctx, sc)
	var broken *scenarios.InvariantError
	if errors.As(err, &broken) {
		t.Logf("the cut run breaks invariants, as a stuck one may: %v", err)
	} else if err != nil {
		t.Fatalf("the scenario up to its stuck point: %v", err)
	}
	target, err := explain.ParseTarget(targetArg, "")
	if err != nil {
		t.Fatal(err)
	}
	e, err := explain.Explain(explain.SnapshotFromHistory(c.History()), target)
	if err != nil {
		t.Fatalf("from the history: %v", err)
	}
	fromHistory = e.String()
	snap, err := explain.FromCluster(ctx, c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	// The live snapshot is read on the cluster's virtual clock, which is
	// not the wall clock's time.
	snap.Now = c.Clock().Now()
	if e, err = explain.Explain(snap, target); err != nil {
		t.Fatalf("from the live cluster: %v", err)
	}
	return fromHistory, e.String()
}

func expectInOrder(t *testing.T, source, out string, want []string) {
	t.Helper()
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("%s: want %q (in this order) in:\n%s", source, w, out)
			return
		}
		rest = rest[i+len(w):]
	}
	t.Logf("%s:\n%s", source, out)
}

// nodeLossHistory runs node-loss-force-detach on the simulator with the
// mock driver through step last, and returns its history and the index of
// the entry that ends step stop: the steps must be those the names begin
// with (a check that the scenario still has the steps the test means).
func nodeLossHistory(t *testing.T, stop int, stopIs string, last int, lastIs string) ([]trace.Entry, int) {
	t.Helper()
	sc, err := scenarios.Load("../scenarios/library/node-loss-force-detach.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sc.Steps[stop-1].Name, stopIs) || !strings.HasPrefix(sc.Steps[last-1].Name, lastIs) {
		t.Fatalf("steps %d and %d are not the ones this test means: update it", stop, last)
	}
	sc.Steps = sc.Steps[:last]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{Nodes: sc.Cluster.Nodes, Mock: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the cluster: %v", err)
		}
	}()
	if _, err := (&scenarios.Runner{Backend: c, Recorder: c.Recorder(), Clock: c.Clock()}).Run(ctx, sc); err != nil {
		t.Fatal(err)
	}
	history := c.History()
	end := slices.IndexFunc(history, func(e trace.Entry) bool {
		return e.Kind == trace.Step && strings.HasPrefix(e.Detail, fmt.Sprintf("step %d passed", stop))
	})
	if end < 0 {
		t.Fatalf("no end of step %d in the history", stop)
	}
	return history, end
}

// TestForceDetachDue checks the explanation's forced-detach time against
// the run: node-loss-force-detach explained at its stuck point (the new
// pod waiting for detach) must name the time the attach/detach controller
// then deletes the attachment on node-a.
func TestForceDetachDue(t *testing.T) {
	const stuck, detached = 14, 17
	history, end := nodeLossHistory(t, stuck, "wait events", detached, "wait pod/app-0")
	snap := explain.SnapshotFromHistory(history[:end+1])
	e, err := explain.Explain(snap, explain.Ref{Kind: explain.KindPod, Namespace: "default", Name: "app-0"})
	if err != nil {
		t.Fatal(err)
	}
	var due time.Time
	var va string
	for _, f := range e.Findings {
		if f.Object.Kind == explain.KindAttachment && !f.Due.IsZero() {
			due, va = f.Due, f.Object.Name
		}
	}
	if due.IsZero() {
		t.Fatalf("no forced detach due in:\n%s", e)
	}
	// When the controller deleted that attachment, on the same clock.
	start := snap.Now.Add(-history[end].At)
	var deleted time.Time
	for _, h := range history[end+1:] {
		if h.Write != nil && h.Write.Kind == "VolumeAttachment" && h.Write.Name == va && h.Actor == "attachdetach-controller" && h.Write.Verb == "delete" {
			deleted = start.Add(h.At)
			break
		}
	}
	if deleted.IsZero() {
		t.Fatalf("the attach/detach controller never deleted %s", va)
	}
	if d := deleted.Sub(due); d < -time.Second || d > 2*time.Second {
		t.Errorf("the explanation says the forced detach is due at %s, the controller deleted the attachment at %s (%s apart)",
			due.Format(time.TimeOnly), deleted.Format(time.TimeOnly), d)
	}
}

// TestEvictionDue checks the explanation's eviction time against the run:
// node-loss-force-detach explained when node-a has just been tainted
// unreachable must name the time the taint eviction controller then
// deletes the pod.
func TestEvictionDue(t *testing.T) {
	const tainted, evicted = 8, 9
	history, end := nodeLossHistory(t, tainted, "wait node/node-a", evicted, "wait pod/app-0")
	snap := explain.SnapshotAt(history, end+1, history[end].At)
	e, err := explain.Explain(snap, explain.Ref{Kind: explain.KindPod, Namespace: "default", Name: "app-0"})
	if err != nil {
		t.Fatal(err)
	}
	due := e.Findings[0].Due
	if due.IsZero() {
		t.Fatalf("no eviction due in:\n%s", e)
	}
	start := snap.Now.Add(-history[end].At)
	var deleted time.Time
	for _, h := range history[end+1:] {
		if h.Write != nil && h.Write.Kind == "Pod" && h.Write.Name == "app-0" && h.Actor == "taint-eviction-controller" && h.Write.Verb == "delete" {
			deleted = start.Add(h.At)
			break
		}
	}
	if deleted.IsZero() {
		t.Fatal("the taint eviction controller never deleted app-0")
	}
	if d := deleted.Sub(due); d < -time.Second || d > 2*time.Second {
		t.Errorf("the explanation says the eviction is due at %s, the controller deleted the pod at %s (%s apart)",
			due.Format(time.TimeOnly), deleted.Format(time.TimeOnly), d)
	}
}

// deletionHeld is a variant of basic-lifecycle stopped where deletions
// wait: the claim and its volume are deleted while a pod still runs on them.
const deletionHeld = `
name: deletion-held
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
          containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
          volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
  - wait: {object: pod/app, jsonPath: '{.status.phase}', equals: Running, timeout: 60s}
  - wait: {object: pvc/data, jsonPath: '{.spec.volumeName}', save: {pv: '{.spec.volumeName}'}}
  - delete: {object: pvc/data}
  - delete: {object: 'pv/${pv}'}
  - sleep: 30s
  - assert: {object: pvc/data, jsonPath: '{.status.phase}', equals: Bound}
`

func TestDeletionHeld(t *testing.T) {
	sc, err := scenarios.Parse("deletion-held.yaml", []byte(deletionHeld), "../scenarios/library")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{Nodes: sc.Cluster.Nodes, Mock: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the cluster: %v", err)
		}
	}()
	res, err := (&scenarios.Runner{Backend: c, Recorder: c.Recorder(), Clock: c.Clock()}).Run(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	snap := explain.SnapshotFromHistory(c.History())
	for _, tt := range []struct {
		target explain.Ref
		want   []string
	}{
		{explain.Ref{Kind: explain.KindClaim, Namespace: "default", Name: "data"},
			[]string{"PersistentVolumeClaim default/data: Terminating", "kubernetes.io/pvc-protection: the pvc-protection controller removes it once no pod uses the claim, and pod app (Running on node node-1) still does",
				"Next: Delete the pods that use the claim"}},
		{explain.Ref{Kind: explain.KindVolume, Name: res.Vars["pv"]},
			[]string{"Terminating", "Bound to default/data", "external-provisioner.volume.kubernetes.io/finalizer: the external-provisioner of hostpath.csisim.io removes it once it has deleted the volume",
				"kubernetes.io/pv-protection: the pv-protection controller removes it once the volume is no longer Bound; it is bound to claim default/data",
				"external-attacher/hostpath-csisim-io: the external-attacher removes it once no VolumeAttachment names the volume; still there: csi-",
				"PersistentVolumeClaim default/data: Terminating", "pod app (Running on node node-1) still does",
				"VolumeAttachment csi-", "attached to node-1", "Pod app on node-1 uses the volume"}},
	} {
		e, err := explain.Explain(snap, tt.target)
		if err != nil {
			t.Fatal(err)
		}
		expectInOrder(t, tt.target.String(), e.String(), tt.want)
	}
}
