package kubelet

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
)

func (f *fakeNode) NodeExpandVolume(_ context.Context, r *csi.NodeExpandVolumeRequest, _ ...grpc.CallOption) (*csi.NodeExpandVolumeResponse, error) {
	f.record("NodeExpandVolume")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expand = append(f.expand, r)
	if len(f.expandErrs) > 0 {
		err := f.expandErrs[0]
		f.expandErrs = f.expandErrs[1:]
		if err != nil {
			return nil, err
		}
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: r.GetCapacityRange().GetRequiredBytes()}, nil
}

func expandCaps() []csi.NodeServiceCapability_RPC_Type {
	return append(stageCaps(), csi.NodeServiceCapability_RPC_EXPAND_VOLUME)
}

const grown = "2Gi"

// grow does what the resizer does once ControllerExpandVolume said node
// expansion is required: the PV gets the new capacity, the claim the
// allocated size, NodeResizePending and FileSystemResizePending; the
// informers see it before grow returns.
func (e *env) grow() {
	e.t.Helper()
	ctx := context.Background()
	size := resource.MustParse(grown)
	pv, err := e.client.CoreV1().PersistentVolumes().Get(ctx, testPV, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	pv.Spec.Capacity[corev1.ResourceStorage] = size
	if _, err := e.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	pvc := e.claim()
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = size
	pvc.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: size}
	pvc.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
		corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending}
	pvc.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending,
		Status: corev1.ConditionTrue, Message: "Waiting for user to (re-)start a pod to finish file system resize of volume on node."}}
	if _, err := e.client.CoreV1().PersistentVolumeClaims("default").Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("the informers to see the resize", func() bool {
		v, err := e.k.volumes.Get(testPV)
		c, cerr := e.k.claims.PersistentVolumeClaims("default").Get("data")
		return err == nil && cerr == nil && v.Spec.Capacity.Storage().Cmp(size) == 0 &&
			c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] == corev1.PersistentVolumeClaimNodeResizePending
	})
}

func (e *env) claim() *corev1.PersistentVolumeClaim {
	e.t.Helper()
	pvc, err := e.client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "data", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return pvc
}

// expectResized checks the claim as MarkNodeExpansionFinishedWithRecovery
// leaves it.
func (e *env) expectResized() {
	e.t.Helper()
	pvc := e.claim()
	if got := pvc.Status.Capacity.Storage(); got.Cmp(resource.MustParse(grown)) != 0 {
		e.t.Errorf("claim capacity %v, want %s", got, grown)
	}
	if pvc.Status.AllocatedResourceStatuses != nil || len(pvc.Status.Conditions) != 0 {
		e.t.Errorf("claim still resizing: statuses %v, conditions %v", pvc.Status.AllocatedResourceStatuses, pvc.Status.Conditions)
	}
	if got := pvc.Status.AllocatedResources.Storage(); got.Cmp(resource.MustParse(grown)) != 0 {
		e.t.Errorf("allocatedResources %v, want %s kept", got, grown)
	}
}

// claimStatusPatches are the kubelet's patches of the claim's status.
func (e *env) claimStatusPatches() []string {
	var out []string
	for _, a := range e.client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "persistentvolumeclaims" && a.GetSubresource() == "status" {
			out = append(out, string(p.GetPatch()))
		}
	}
	return out
}

func (e *env) eventMessages(reason string) []string {
	var out []string
	for _, ev := range e.events() {
		if ev.Reason == reason {
			out = append(out, ev.InvolvedObject.Kind+": "+ev.Message)
		}
	}
	slices.Sort(out)
	return out
}

// periodicSync is the pod's periodic sync: the kubelet's Resync, then the
// pod's key as the queue hands it over.
func (e *env) periodicSync() error {
	e.t.Helper()
	e.k.Resync(context.Background())
	return e.sync("default/app")
}

func TestOnlineExpansion(t *testing.T) {
	e := newEnv(t, envOptions{caps: expandCaps(), fsType: "ext4"})
	e.runningPod()
	e.grow()
	// Nothing happens before the pod's periodic sync reads the PV again.
	if err := e.sync("default/app"); err != nil {
		t.Fatal(err)
	}
	if len(e.node.expand) != 0 {
		t.Fatalf("expanded before the periodic sync: %v", e.node.lifecycle())
	}
	if err := e.periodicSync(); err != nil {
		t.Fatal(err)
	}
	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume", "NodeExpandVolume"}) {
		t.Fatalf("calls = %v", got)
	}
	r := e.node.expand[0]
	if r.GetVolumeId() != testHandle || r.GetVolumePath() != e.node.pub[0].GetTargetPath() ||
		r.GetStagingTargetPath() != StagingPath(e.dir, testDriver, testHandle) ||
		r.GetCapacityRange().GetRequiredBytes() != 2<<30 || r.GetCapacityRange().GetLimitBytes() != 0 ||
		r.GetVolumeCapability().GetMount().GetFsType() != "ext4" ||
		r.GetVolumeCapability().GetAccessMode().GetMode() != csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER {
		t.Errorf("NodeExpandVolume request %v", r)
	}
	e.expectResized()
	patches := e.claimStatusPatches()
	if len(patches) != 2 || !strings.Contains(patches[0], `"NodeResizeInProgress"`) || !strings.Contains(patches[0], `"resourceVersion"`) {
		t.Errorf("claim status patches %q, want NodeResizeInProgress, then the end", patches)
	}
	want := []string{
		`PersistentVolumeClaim: MountVolume.NodeExpandVolume succeeded for volume "pv-1" node-1`,
		`Pod: MountVolume.NodeExpandVolume succeeded for volume "pv-1" node-1`,
	}
	if got := e.eventMessages("FileSystemResizeSuccessful"); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	// Done: later syncs expand nothing.
	if err := e.periodicSync(); err != nil {
		t.Fatal(err)
	}
	if len(e.node.expand) != 1 {
		t.Errorf("expanded again: %v", e.node.lifecycle())
	}
}

func TestOfflineExpansionAtMount(t *testing.T) {
	for _, tt := range []struct {
		name  string
		modes []corev1.PersistentVolumeAccessMode
		// calls: a ReadWriteMany volume is expanded again once mounted:
		// the volume manager's size is still the claim's old one, and
		// an RWX claim already resized is expanded on every node.
		calls []string
	}{
		{"ReadWriteOnce", nil, []string{"NodeStageVolume", "NodePublishVolume", "NodeExpandVolume"}},
		{"ReadWriteMany", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			[]string{"NodeStageVolume", "NodePublishVolume", "NodeExpandVolume", "NodeExpandVolume"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{caps: expandCaps(), modes: tt.modes})
			e.grow()
			e.runningPod()
			if got := e.node.lifecycle(); !slices.Equal(got, tt.calls) {
				t.Fatalf("calls = %v, want %v", got, tt.calls)
			}
			for _, r := range e.node.expand {
				if r.GetVolumePath() != e.node.pub[0].GetTargetPath() || r.GetStagingTargetPath() != e.node.stage[0].GetStagingTargetPath() {
					t.Errorf("NodeExpandVolume at %s (staging %s)", r.GetVolumePath(), r.GetStagingTargetPath())
				}
			}
			e.expectResized()
			if got := len(e.claimStatusPatches()); got != 2 {
				t.Errorf("%d claim status patches, want 2", got)
			}
			if err := e.periodicSync(); err != nil {
				t.Fatal(err)
			}
			if got := e.node.lifecycle(); len(got) != len(tt.calls) {
				t.Errorf("calls after a periodic sync = %v", got)
			}
		})
	}
}

func TestBlockExpansion(t *testing.T) {
	t.Run("at map", func(t *testing.T) {
		e := newEnv(t, envOptions{caps: expandCaps(), block: true})
		e.grow()
		e.runningPod()
		if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume", "NodeExpandVolume"}) {
			t.Fatalf("calls = %v", got)
		}
		r := e.node.expand[0]
		// volume_path is the device (the publish path); the staging
		// path, as staged in this very operation.
		if r.GetVolumePath() != e.node.pub[0].GetTargetPath() || r.GetStagingTargetPath() != BlockStagingPath(e.dir, testPV) ||
			r.GetVolumeCapability().GetBlock() == nil {
			t.Errorf("NodeExpandVolume request %v", r)
		}
		e.expectResized()
	})
	t.Run("online", func(t *testing.T) {
		e := newEnv(t, envOptions{caps: expandCaps(), block: true})
		e.runningPod()
		e.grow()
		if err := e.periodicSync(); err != nil {
			t.Fatal(err)
		}
		if len(e.node.expand) != 1 {
			t.Fatalf("calls = %v", e.node.lifecycle())
		}
		r := e.node.expand[0]
		if r.GetVolumePath() != BlockPublishPath(e.dir, testPV, "uid-1") || r.GetStagingTargetPath() != BlockStagingPath(e.dir, testPV) ||
			r.GetVolumeCapability().GetBlock() == nil {
			t.Errorf("NodeExpandVolume request %v", r)
		}
		e.expectResized()
	})
}

func TestFailingExpansionBacksOff(t *testing.T) {
	boom := status.Error(codes.Internal, "resize2fs failed")
	e := newEnv(t, envOptions{caps: expandCaps()})
	e.node.expandErrs = []error{boom, boom}
	e.runningPod()
	e.grow()
	e.k.Resync(context.Background())
	var waits []time.Duration
	for range 2 {
		d, ok := requeuedAfter(e.sync("default/app"))
		if !ok {
			t.Fatalf("a failed expansion is not retried")
		}
		waits = append(waits, d)
		// Woken early: still backing off, no call.
		calls := len(e.node.expand)
		if early, _ := requeuedAfter(e.sync("default/app")); early != d || len(e.node.expand) != calls {
			t.Fatalf("early sync: wait %v, %d calls", early, len(e.node.expand))
		}
		e.clock.Step(d)
	}
	if !slices.Equal(waits, []time.Duration{500 * time.Millisecond, time.Second}) {
		t.Errorf("backoff %v", waits)
	}
	pvc := e.claim()
	if st := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; st != corev1.PersistentVolumeClaimNodeResizeInProgress {
		t.Errorf("resize status %q, want NodeResizeInProgress", st)
	}
	var cond *corev1.PersistentVolumeClaimCondition
	for i, c := range pvc.Status.Conditions {
		if c.Type == corev1.PersistentVolumeClaimNodeResizeError {
			cond = &pvc.Status.Conditions[i]
		}
	}
	wantMsg := "failed to expand pvc with Expander.NodeExpand failed to expand the volume : rpc error: code = Internal desc = resize2fs failed"
	if cond == nil || cond.Message != wantMsg {
		t.Errorf("conditions %+v, want NodeResizeError %q", pvc.Status.Conditions, wantMsg)
	}
	evs := e.eventMessages("VolumeResizeFailed")
	if len(evs) != 1 || evs[0] != `Pod: NodeExpandVolume.NodeExpandVolume failed for volume "pv-1" : Expander.NodeExpand failed to expand the volume : rpc error: code = Internal desc = resize2fs failed` {
		t.Errorf("events %q", evs)
	}
	// The third try succeeds: the error condition goes with the others.
	if err := e.sync("default/app"); err != nil {
		t.Fatal(err)
	}
	if len(e.node.expand) != 3 {
		t.Errorf("%d NodeExpandVolume calls, want 3", len(e.node.expand))
	}
	e.expectResized()
}

func TestInfeasibleExpansionAtMount(t *testing.T) {
	e := newEnv(t, envOptions{caps: expandCaps()})
	e.node.expandErrs = []error{status.Error(codes.OutOfRange, "too large")}
	e.grow()
	// The mount fails once; then the claim is NodeResizeInfeasible and
	// the kubelet no longer expands it: the pod starts.
	err := e.sync("default/app")
	if _, ok := requeuedAfter(err); !ok {
		t.Fatalf("sync = %v, want a requeue", err)
	}
	pvc := e.claim()
	if st := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; st != corev1.PersistentVolumeClaimNodeResizeInfeasible {
		t.Errorf("resize status %q, want NodeResizeInfeasible", st)
	}
	evs := e.eventMessages("FailedMount")
	want := `Pod: MountVolume.Setup failed while expanding volume for volume "pv-1" : Expander.NodeExpand failed to expand the volume rpc error: code = OutOfRange desc = too large`
	if len(evs) != 1 || evs[0] != want {
		t.Errorf("events %q, want %q", evs, want)
	}
	e.syncUntilRunning()
	want2 := []string{"NodeStageVolume", "NodePublishVolume", "NodeExpandVolume", "NodePublishVolume"}
	if got := e.node.lifecycle(); !slices.Equal(got, want2) {
		t.Errorf("calls = %v, want %v", got, want2)
	}
}

func TestExpansionWithoutNodeCapability(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps()})
	e.grow()
	var waits []time.Duration
	for range 3 {
		d, ok := requeuedAfter(e.sync("default/app"))
		if !ok {
			t.Fatal("the mount did not fail")
		}
		waits = append(waits, d)
		e.clock.Step(d)
	}
	if !slices.Equal(waits, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}) {
		t.Errorf("backoff %v", waits)
	}
	// The driver is never asked; each try publishes again and fails.
	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume", "NodePublishVolume", "NodePublishVolume"}) {
		t.Errorf("calls = %v", got)
	}
	if p, err := e.k.pods.Pods("default").Get("app"); err != nil || p.Status.Phase == corev1.PodRunning {
		t.Errorf("the pod runs (%v)", err)
	}
	evs := e.events()
	msg := `MountVolume.Setup failed while expanding volume for volume "pv-1" : NodeExpand is not supported by the CSI driver hostpath.csisim.io`
	found := slices.ContainsFunc(evs, func(ev corev1.Event) bool { return ev.Reason == "FailedMount" && ev.Message == msg && ev.Count == 3 })
	if !found {
		t.Errorf("events %+v, want FailedMount %q three times", evs, msg)
	}
	pvc := e.claim()
	if st := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; st != corev1.PersistentVolumeClaimNodeResizeInProgress {
		t.Errorf("resize status %q, want NodeResizeInProgress", st)
	}
	if !slices.ContainsFunc(pvc.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool {
		return c.Type == corev1.PersistentVolumeClaimNodeResizeError && c.Message == "failed to expand pvc with NodeExpand is not supported by the CSI driver hostpath.csisim.io"
	}) {
		t.Errorf("conditions %+v", pvc.Status.Conditions)
	}
}

func TestInUseErrorStopsOnlineExpansion(t *testing.T) {
	e := newEnv(t, envOptions{caps: expandCaps()})
	e.node.expandErrs = []error{status.Error(codes.FailedPrecondition, "volume is in use")}
	e.runningPod()
	e.grow()
	if err := e.periodicSync(); err != nil {
		t.Fatalf("FailedPrecondition is not a failure of the operation: %v", err)
	}
	e.clock.Step(time.Hour)
	if err := e.periodicSync(); err != nil {
		t.Fatal(err)
	}
	if len(e.node.expand) != 1 {
		t.Errorf("%d NodeExpandVolume calls, want 1: no more online expansion on this node", len(e.node.expand))
	}
	if evs := e.eventMessages("VolumeResizeFailed"); len(evs) != 0 {
		t.Errorf("events %q", evs)
	}
}

func TestMergeResizeConditions(t *testing.T) {
	other := corev1.PersistentVolumeClaimCondition{Type: "Other", Status: corev1.ConditionTrue}
	pending := corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}
	oldErr := corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimNodeResizeError, Status: corev1.ConditionTrue, Message: "old"}
	newErr := corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimNodeResizeError, Status: corev1.ConditionTrue, Message: "new"}
	for _, tt := range []struct {
		name    string
		have    []corev1.PersistentVolumeClaimCondition
		add     []corev1.PersistentVolumeClaimCondition
		keepOld bool
		want    []corev1.PersistentVolumeClaimCondition
	}{
		{"end of resize", []corev1.PersistentVolumeClaimCondition{other, pending, oldErr}, nil, false, []corev1.PersistentVolumeClaimCondition{other}},
		{"error added", []corev1.PersistentVolumeClaimCondition{pending, other}, []corev1.PersistentVolumeClaimCondition{newErr}, true,
			[]corev1.PersistentVolumeClaimCondition{pending, other, newErr}},
		{"same status keeps the old one", []corev1.PersistentVolumeClaimCondition{oldErr}, []corev1.PersistentVolumeClaimCondition{newErr}, true,
			[]corev1.PersistentVolumeClaimCondition{oldErr}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pvc := &corev1.PersistentVolumeClaim{Status: corev1.PersistentVolumeClaimStatus{Conditions: tt.have}}
			mergeResizeConditions(pvc, tt.add, tt.keepOld)
			if !equality.Semantic.DeepEqual(pvc.Status.Conditions, tt.want) {
				t.Errorf("conditions %+v, want %+v", pvc.Status.Conditions, tt.want)
			}
		})
	}
}

func TestNodeExpandSecret(t *testing.T) {
	for _, tt := range []struct {
		name    string
		secret  bool
		wantErr string
	}{
		{name: "sent", secret: true},
		{name: "missing", wantErr: `MountVolume.Setup failed while expanding volume for volume "pv-1" : expander.NodeExpand failed to get NodeExpandSecretRef default/expand-creds: kubernetes.io/csi: failed to find the secret expand-creds in the namespace default with error: secrets "expand-creds" not found`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{caps: expandCaps()})
			ctx := context.Background()
			if tt.secret {
				_, err := e.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "expand-creds", Namespace: "default"},
					Data: map[string][]byte{"password": []byte("s3cret")}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
			}
			pv, err := e.client.CoreV1().PersistentVolumes().Get(ctx, testPV, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pv.Spec.CSI.NodeExpandSecretRef = &corev1.SecretReference{Name: "expand-creds", Namespace: "default"}
			if _, err := e.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			e.grow()
			if tt.wantErr == "" {
				e.runningPod()
				if len(e.node.expand) != 1 || e.node.expand[0].GetSecrets()["password"] != "s3cret" {
					t.Fatalf("NodeExpandVolume requests %v", e.node.expand)
				}
				e.expectResized()
				return
			}
			if _, ok := requeuedAfter(e.sync("default/app")); !ok {
				t.Fatal("the mount did not fail")
			}
			if len(e.node.expand) != 0 {
				t.Errorf("NodeExpandVolume called without its secret")
			}
			if evs := e.eventMessages("FailedMount"); len(evs) != 1 || evs[0] != "Pod: "+tt.wantErr {
				t.Errorf("events %q, want %q", evs, tt.wantErr)
			}
		})
	}
}

func TestReadOnlyClaimIsNotExpanded(t *testing.T) {
	e := newEnv(t, envOptions{caps: expandCaps(), readOnly: true})
	e.grow()
	e.runningPod()
	if len(e.node.expand) != 0 {
		t.Fatalf("a read-only claim was expanded: %v", e.node.lifecycle())
	}
	msg := `MountVolume.NodeExpandVolume failed for volume "pv-1" requested read-only file system`
	if got := e.eventMessages("FileSystemResizeFailed"); !slices.Equal(got, []string{"PersistentVolumeClaim: " + msg, "Pod: " + msg}) {
		t.Errorf("events %q", got)
	}
	if st := e.claim().Status.AllocatedResourceStatuses[corev1.ResourceStorage]; st != corev1.PersistentVolumeClaimNodeResizePending {
		t.Errorf("resize status %q, want NodeResizePending left alone", st)
	}
}

func TestRestartedKubeletExpandsAtRemount(t *testing.T) {
	e := newEnv(t, envOptions{caps: expandCaps()})
	e.runningPod()
	if err := e.k.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.grow()
	// The reconstructed volume is set up again, and expanded as part of it.
	if err := e.sync("default/app"); err != nil {
		t.Fatal(err)
	}
	want := []string{"NodeStageVolume", "NodePublishVolume", "NodeStageVolume", "NodePublishVolume", "NodeExpandVolume"}
	if got := e.node.lifecycle(); !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	e.expectResized()
}

// TestExpansionWaitsForTheClaim: the kubelet sees the larger PV before the
// resizer has marked the claim for the node (still
// ControllerResizeInProgress): it does nothing, and the claim's update
// wakes the pod, whose volume is expanded then.
func TestExpansionWaitsForTheClaim(t *testing.T) {
	e := newEnv(t, envOptions{caps: expandCaps()})
	e.runningPod()
	e.grow()
	ctx := context.Background()
	pvc := e.claim()
	pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = corev1.PersistentVolumeClaimControllerResizeInProgress
	if _, err := e.client.CoreV1().PersistentVolumeClaims("default").Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the informer to see the claim", func() bool {
		c, err := e.k.claims.PersistentVolumeClaims("default").Get("data")
		return err == nil && c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] == corev1.PersistentVolumeClaimControllerResizeInProgress
	})
	if err := e.periodicSync(); err != nil {
		t.Fatal(err)
	}
	if len(e.node.expand) != 0 {
		t.Fatalf("expanded a claim not marked for the node: %v", e.node.lifecycle())
	}
	for e.k.queue.Len() > 0 {
		key, _ := e.k.queue.Get()
		e.k.queue.Done(key)
	}
	pvc = e.claim()
	pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = corev1.PersistentVolumeClaimNodeResizePending
	if _, err := e.client.CoreV1().PersistentVolumeClaims("default").Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the claim's update to wake the pod", func() bool { return e.k.queue.Len() > 0 })
	key, _ := e.k.queue.Get()
	e.k.queue.Done(key)
	if key != "default/app" {
		t.Fatalf("woke %q", key)
	}
	if err := e.sync(key); err != nil {
		t.Fatal(err)
	}
	if len(e.node.expand) != 1 {
		t.Fatalf("calls = %v", e.node.lifecycle())
	}
	e.expectResized()
}
