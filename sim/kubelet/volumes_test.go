package kubelet

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/controller"
)

const (
	testDriver = "hostpath.csisim.io"
	testNode   = "node-1"
	testHandle = "vol-1"
	testPV     = "pv-1"
)

// fakeNode is a CSI node plugin that records requests; its publish
// creates the target (a directory with a file, or a file for block) so
// that the kubelet has something to give to an fsGroup.
type fakeNode struct {
	csi.NodeClient
	caps []csi.NodeServiceCapability_RPC_Type

	mu    sync.Mutex
	calls []string
	stage []*csi.NodeStageVolumeRequest
	pub   []*csi.NodePublishVolumeRequest
	unpub []*csi.NodeUnpublishVolumeRequest
	unst  []*csi.NodeUnstageVolumeRequest
	stats []*csi.NodeGetVolumeStatsRequest
	// expand: NodeExpandVolume requests; expandErrs: what the next ones
	// answer (nil: OK).
	expand     []*csi.NodeExpandVolumeRequest
	expandErrs []error
}

func (f *fakeNode) record(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
}

// lifecycle are the calls other than the informational ones.
func (f *fakeNode) lifecycle() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if c != "NodeGetCapabilities" && c != "NodeGetInfo" && c != "NodeGetVolumeStats" {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeNode) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest, ...grpc.CallOption) (*csi.NodeGetCapabilitiesResponse, error) {
	f.record("NodeGetCapabilities")
	resp := &csi.NodeGetCapabilitiesResponse{}
	for _, c := range f.caps {
		resp.Capabilities = append(resp.Capabilities, &csi.NodeServiceCapability{
			Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: c}}})
	}
	return resp, nil
}

func (f *fakeNode) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest, ...grpc.CallOption) (*csi.NodeGetInfoResponse, error) {
	f.record("NodeGetInfo")
	return &csi.NodeGetInfoResponse{NodeId: testNode}, nil
}

func (f *fakeNode) NodeStageVolume(_ context.Context, r *csi.NodeStageVolumeRequest, _ ...grpc.CallOption) (*csi.NodeStageVolumeResponse, error) {
	f.record("NodeStageVolume")
	f.mu.Lock()
	f.stage = append(f.stage, r)
	f.mu.Unlock()
	return &csi.NodeStageVolumeResponse{}, nil
}

func (f *fakeNode) NodePublishVolume(_ context.Context, r *csi.NodePublishVolumeRequest, _ ...grpc.CallOption) (*csi.NodePublishVolumeResponse, error) {
	f.record("NodePublishVolume")
	f.mu.Lock()
	f.pub = append(f.pub, r)
	f.mu.Unlock()
	if r.GetVolumeCapability().GetBlock() != nil {
		return &csi.NodePublishVolumeResponse{}, os.WriteFile(r.GetTargetPath(), nil, 0o600)
	}
	if err := os.MkdirAll(r.GetTargetPath(), 0o750); err != nil {
		return nil, err
	}
	return &csi.NodePublishVolumeResponse{}, os.WriteFile(filepath.Join(r.GetTargetPath(), "data"), []byte("x"), 0o600)
}

func (f *fakeNode) NodeUnpublishVolume(_ context.Context, r *csi.NodeUnpublishVolumeRequest, _ ...grpc.CallOption) (*csi.NodeUnpublishVolumeResponse, error) {
	f.record("NodeUnpublishVolume")
	f.mu.Lock()
	f.unpub = append(f.unpub, r)
	f.mu.Unlock()
	return &csi.NodeUnpublishVolumeResponse{}, os.RemoveAll(r.GetTargetPath())
}

func (f *fakeNode) NodeUnstageVolume(_ context.Context, r *csi.NodeUnstageVolumeRequest, _ ...grpc.CallOption) (*csi.NodeUnstageVolumeResponse, error) {
	f.record("NodeUnstageVolume")
	f.mu.Lock()
	f.unst = append(f.unst, r)
	f.mu.Unlock()
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (f *fakeNode) NodeGetVolumeStats(_ context.Context, r *csi.NodeGetVolumeStatsRequest, _ ...grpc.CallOption) (*csi.NodeGetVolumeStatsResponse, error) {
	f.record("NodeGetVolumeStats")
	f.mu.Lock()
	f.stats = append(f.stats, r)
	f.mu.Unlock()
	return &csi.NodeGetVolumeStatsResponse{}, nil
}

// env is one kubelet on a fake API server with an attached volume, its
// claim and a pod that uses it.
type env struct {
	t       *testing.T
	k       *Kubelet
	client  *fake.Clientset
	node    *fakeNode
	clock   *testingclock.FakeClock
	dir     string
	pod     *corev1.Pod
	factory informers.SharedInformerFactory
}

type envOptions struct {
	driver   storagev1.CSIDriverSpec
	caps     []csi.NodeServiceCapability_RPC_Type
	pvDriver string
	block    bool
	modes    []corev1.PersistentVolumeAccessMode
	fsType   string
	readOnly bool
	fsGroup  *int64
	// mountCheck: look for real mounts (the fake node plugin mounts
	// nothing, so nothing it publishes counts as mounted).
	mountCheck bool
	// inline makes the pod's volume "data" this inline csi: volume
	// instead of the claim (inline_test.go); extra are more objects.
	inline *corev1.CSIVolumeSource
	extra  []runtime.Object
	// noCSIDriver leaves the CSIDriver object out.
	noCSIDriver bool
	// ephemeral makes the pod's volume "data" a generic ephemeral one,
	// whose claim is app-data, owned by the pod unless foreignClaim.
	ephemeral, foreignClaim bool
}

func stageCaps() []csi.NodeServiceCapability_RPC_Type {
	return []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS, csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER}
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	if o.pvDriver == "" {
		o.pvDriver = testDriver
	}
	if o.modes == nil {
		o.modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	attach := true
	if o.driver.AttachRequired == nil {
		o.driver.AttachRequired = &attach
	}
	unique := attachdetach.UniqueVolumeName(o.pvDriver, testHandle)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: testPV},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: o.modes,
			ClaimRef:    &corev1.ObjectReference{Namespace: "default", Name: "data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: o.pvDriver, VolumeHandle: testHandle, FSType: o.fsType, VolumeAttributes: map[string]string{"kind": "directory"}}},
		},
	}
	if o.block {
		mode := corev1.PersistentVolumeBlock
		pv.Spec.VolumeMode = &mode
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: testPV, AccessModes: o.modes,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "uid-1"},
		Spec: corev1.PodSpec{NodeName: testNode, ServiceAccountName: "builder",
			SecurityContext: &corev1.PodSecurityContext{FSGroup: o.fsGroup},
			Containers:      []corev1.Container{usesData(o.block)},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: o.readOnly}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	// The node's status has reported the volume in use already, as a
	// kubelet's status sync would before it mounts.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode},
		Status: corev1.NodeStatus{VolumesAttached: []corev1.AttachedVolume{{Name: unique}}, VolumesInUse: []corev1.UniqueVolumeName{unique}}}
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: attachdetach.AttachmentName(testHandle, o.pvDriver, testNode)},
		Status: storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"devicePath": "/dev/loop9"}}}
	drv := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: testDriver}, Spec: o.driver}
	if o.inline != nil {
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{CSI: o.inline}}}
	}
	if o.ephemeral {
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}}}
		pvc.Name, pv.Spec.ClaimRef.Name = "app-data", "app-data"
		if !o.foreignClaim {
			pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "app", UID: pod.UID, Controller: ptr(true)}}
		}
	}
	objs := append([]runtime.Object{pv, pvc, pod, node, va}, o.extra...)
	if !o.noCSIDriver {
		objs = append(objs, drv)
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := controller.Runtime{Clock: clk, NewQueue: controller.NewQueue, NewQueueWithBackoff: controller.NewQueueWithBackoff,
		NewEventRecorder: func(c kubernetes.Interface, component, host string) (record.EventRecorder, func()) {
			return controller.NewSyncEventRecorder(c, component, host, clk), func() {}
		}}
	fn := &fakeNode{caps: o.caps}
	dir := t.TempDir()
	k := New(Config{NodeName: testNode, DriverName: testDriver, Dir: dir, SkipMountCheck: !o.mountCheck}, client, factory, factory, fn, rt)
	k.desired.markReportedInUse([]corev1.UniqueVolumeName{unique})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return &env{t: t, k: k, client: client, node: fn, clock: clk, dir: dir, pod: pod, factory: factory}
}

// sync runs the kubelet's sync of the pod (or another key) once.
func (e *env) sync(key string) error {
	e.t.Helper()
	return e.k.syncPod(context.Background(), key)
}

// waitFor polls the informers until cond holds.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.t.Fatalf("timed out waiting for %s", what)
}

func (e *env) runningPod() {
	e.t.Helper()
	// Set up at the first sync, started at WaitForAttachAndMount's next look.
	e.syncUntilRunning()
}

func (e *env) events() []corev1.Event {
	list, err := e.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

func TestMountRequests(t *testing.T) {
	gid := testGroup()
	e := newEnv(t, envOptions{caps: stageCaps(), fsType: "ext4", fsGroup: &gid,
		driver: storagev1.CSIDriverSpec{PodInfoOnMount: ptr(true)}})
	e.runningPod()

	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume"}) {
		t.Fatalf("calls = %v", got)
	}
	st, pub := e.node.stage[0], e.node.pub[0]
	wantStaging := filepath.Join(e.dir, "plugins/kubernetes.io/csi", testDriver, fmt.Sprintf("%x", sha256.Sum256([]byte(testHandle))), "globalmount")
	if st.GetStagingTargetPath() != wantStaging {
		t.Errorf("staging path %s, want %s", st.GetStagingTargetPath(), wantStaging)
	}
	if got := st.GetPublishContext()["devicePath"]; got != "/dev/loop9" {
		t.Errorf("stage publish context = %v", st.GetPublishContext())
	}
	if st.GetVolumeContext()["csi.storage.k8s.io/pod.name"] != "" {
		t.Errorf("NodeStageVolume got pod information: %v", st.GetVolumeContext())
	}
	target := filepath.Join(e.dir, "pods/uid-1/volumes/kubernetes.io~csi", testPV, "mount")
	if pub.GetTargetPath() != target || pub.GetStagingTargetPath() != st.GetStagingTargetPath() {
		t.Errorf("publish target %s staging %s, want %s and the staging path", pub.GetTargetPath(), pub.GetStagingTargetPath(), target)
	}
	wantCtx := map[string]string{"kind": "directory",
		"csi.storage.k8s.io/pod.name": "app", "csi.storage.k8s.io/pod.namespace": "default",
		"csi.storage.k8s.io/pod.uid": "uid-1", "csi.storage.k8s.io/serviceAccount.name": "builder",
		"csi.storage.k8s.io/ephemeral": "false"}
	if got := pub.GetVolumeContext(); len(got) != len(wantCtx) {
		t.Errorf("volume context %v, want %v", got, wantCtx)
	} else {
		for key, v := range wantCtx {
			if got[key] != v {
				t.Errorf("volume context %s = %q, want %q", key, got[key], v)
			}
		}
	}
	mnt := pub.GetVolumeCapability().GetMount()
	if pub.GetReadonly() || mnt == nil || mnt.GetFsType() != "ext4" || mnt.GetVolumeMountGroup() != "" ||
		pub.GetVolumeCapability().GetAccessMode().GetMode() != csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER {
		t.Errorf("publish readonly=%v capability=%v", pub.GetReadonly(), pub.GetVolumeCapability())
	}
	// vol_data.json beside the mount and the staging path.
	data, err := loadVolumeData(filepath.Dir(target))
	if err != nil || data["volumeHandle"] != testHandle || data["driverName"] != testDriver || data["specVolID"] != testPV ||
		data["nodeName"] != testNode || data["volumeLifecycleMode"] != "Persistent" ||
		data["attachmentID"] != attachdetach.AttachmentName(testHandle, testDriver, testNode) {
		t.Errorf("pod vol_data.json = %v, %v", data, err)
	}
	if data, err := loadVolumeData(filepath.Dir(st.GetStagingTargetPath())); err != nil || data["volumeHandle"] != testHandle {
		t.Errorf("staging vol_data.json = %v, %v", data, err)
	}
	// Default policy, fsType ext4, RWO: the kubelet gave the published
	// directory to the fsGroup.
	for _, p := range []string{target, filepath.Join(target, "data")} {
		mode, group := statOf(t, p)
		if group != gid || mode&0o060 != 0o060 {
			t.Errorf("%s: group %d mode %v, want group %d with rw", p, group, mode, gid)
		}
	}
	if mode, _ := statOf(t, target); mode&os.ModeSetgid == 0 {
		t.Errorf("%s has no setgid: %v", target, mode)
	}
}

func ptr[T any](v T) *T { return &v }

func TestFSGroupDelegatedToDriver(t *testing.T) {
	gid := int64(4242)
	e := newEnv(t, envOptions{caps: append(stageCaps(), csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP), fsType: "ext4", fsGroup: &gid,
		driver: storagev1.CSIDriverSpec{FSGroupPolicy: ptr(storagev1.FileFSGroupPolicy)}})
	e.runningPod()
	for name, c := range map[string]*csi.VolumeCapability{"stage": e.node.stage[0].GetVolumeCapability(), "publish": e.node.pub[0].GetVolumeCapability()} {
		if got := c.GetMount().GetVolumeMountGroup(); got != "4242" {
			t.Errorf("%s volume_mount_group = %q, want 4242", name, got)
		}
	}
	if _, group := statOf(t, e.node.pub[0].GetTargetPath()); group == gid {
		t.Errorf("the kubelet changed the group although the driver applies it")
	}
	if got := e.node.pub[0].GetVolumeContext()["csi.storage.k8s.io/pod.name"]; got != "" {
		t.Errorf("pod information without podInfoOnMount: %v", e.node.pub[0].GetVolumeContext())
	}
}

func TestReadOnlyClaimAndAccessModes(t *testing.T) {
	gid := testGroup()
	e := newEnv(t, envOptions{caps: []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME},
		readOnly: true, fsGroup: &gid, modes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
		driver: storagev1.CSIDriverSpec{FSGroupPolicy: ptr(storagev1.FileFSGroupPolicy)}})
	e.runningPod()
	pub := e.node.pub[0]
	if !pub.GetReadonly() || pub.GetVolumeCapability().GetAccessMode().GetMode() != csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY {
		t.Errorf("readonly=%v mode=%v, want true and MULTI_NODE_READER_ONLY", pub.GetReadonly(), pub.GetVolumeCapability().GetAccessMode().GetMode())
	}
	if mode, group := statOf(t, pub.GetTargetPath()); group == gid && gid != int64(os.Getgid()) || mode&os.ModeSetgid != 0 {
		t.Errorf("a read-only mount was given to the fsGroup: group %d mode %v", group, mode)
	}
}

func TestAccessModeMapping(t *testing.T) {
	multi := nodeCaps{csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER: true}
	for _, tt := range []struct {
		modes []corev1.PersistentVolumeAccessMode
		caps  nodeCaps
		want  csi.VolumeCapability_AccessMode_Mode
	}{
		{nil, nodeCaps{}, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{nil, multi, csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, nodeCaps{}, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, multi, csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce}, multi, csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany}, multi, csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
	} {
		pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{AccessModes: tt.modes}}
		if got := accessMode(pv, tt.caps); got != tt.want {
			t.Errorf("accessMode(%v, %v) = %v, want %v", tt.modes, tt.caps, got, tt.want)
		}
	}
}

func TestBlockVolumePaths(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(), block: true})
	e.runningPod()
	st, pub := e.node.stage[0], e.node.pub[0]
	if want := filepath.Join(e.dir, "plugins/kubernetes.io/csi/volumeDevices/staging", testPV); st.GetStagingTargetPath() != want {
		t.Errorf("block staging path %s, want %s", st.GetStagingTargetPath(), want)
	}
	if want := filepath.Join(e.dir, "plugins/kubernetes.io/csi/volumeDevices/publish", testPV, "uid-1"); pub.GetTargetPath() != want {
		t.Errorf("block publish path %s, want %s", pub.GetTargetPath(), want)
	}
	for name, c := range map[string]*csi.VolumeCapability{"stage": st.GetVolumeCapability(), "publish": pub.GetVolumeCapability()} {
		if c.GetBlock() == nil || c.GetMount() != nil {
			t.Errorf("%s capability %v, want access type block", name, c)
		}
	}
	link := filepath.Join(e.dir, "pods/uid-1/volumeDevices/kubernetes.io~csi", testPV)
	if dest, err := os.Readlink(link); err != nil || dest != pub.GetTargetPath() {
		t.Errorf("pod device %s -> %q (%v), want a link to %s", link, dest, err, pub.GetTargetPath())
	}
	if data, err := loadVolumeData(filepath.Join(e.dir, "plugins/kubernetes.io/csi/volumeDevices", testPV, "data")); err != nil || data["volumeHandle"] != testHandle {
		t.Errorf("block vol_data.json = %v, %v", data, err)
	}

	var msgs []string
	for _, ev := range e.events() {
		if ev.Reason == "SuccessfulMountVolume" && ev.Type == corev1.EventTypeNormal {
			msgs = append(msgs, ev.Message)
		}
	}
	slices.Sort(msgs)
	wantMsgs := []string{
		`MapVolume.MapPodDevice succeeded for volume "pv-1" globalMapPath "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/pv-1/dev"`,
		`MapVolume.MapPodDevice succeeded for volume "pv-1" volumeMapPath "/var/lib/kubelet/pods/uid-1/volumeDevices/kubernetes.io~csi"`,
	}
	if !slices.Equal(msgs, wantMsgs) {
		t.Errorf("events %q, want %q", msgs, wantMsgs)
	}

	e.deletePod()
	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}) {
		t.Fatalf("calls = %v", got)
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Errorf("pod device link still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "plugins/kubernetes.io/csi/volumeDevices", testPV)); !os.IsNotExist(err) {
		t.Errorf("block volume directory left behind: %v", err)
	}
}

// deletePod deletes the pod from the API and syncs its (now missing) key.
func (e *env) deletePod() {
	e.t.Helper()
	if err := e.client.CoreV1().Pods("default").Delete(context.Background(), "app", metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("the pod to leave the informer", func() bool {
		_, err := e.k.pods.Pods("default").Get("app")
		return err != nil
	})
	if err := e.sync("default/app"); err != nil {
		e.t.Fatalf("sync after delete: %v", err)
	}
}

func TestRestartReconstructsAndCleansUp(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps()})
	e.runningPod()
	target := e.node.pub[0].GetTargetPath()

	if err := e.k.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := e.k.actual.mountedVolume("uid-1", testPV)
	st := e.k.actual.stagedVolume(attachdetach.UniqueVolumeName(testDriver, testHandle))
	if m == nil || !m.uncertain || m.target != target || m.handle != testHandle || st == nil || !st.uncertain ||
		st.path != StagingPath(e.dir, testDriver, testHandle) {
		t.Fatalf("reconstructed mount %+v, staging %+v", m, st)
	}
	// The pod still exists: staged and published again, no status write.
	if err := e.sync("default/app"); err != nil {
		t.Fatal(err)
	}
	want := []string{"NodeStageVolume", "NodePublishVolume", "NodeStageVolume", "NodePublishVolume"}
	if got := e.node.lifecycle(); !slices.Equal(got, want) {
		t.Fatalf("calls after restart = %v, want %v", got, want)
	}
	// The pod goes while nothing syncs its key: the orphan clean-up finds it.
	if err := e.k.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.client.CoreV1().Pods("default").Delete(context.Background(), "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the pod to leave the informer", func() bool {
		_, err := e.k.pods.Pods("default").Get("app")
		return err != nil
	})
	if err := e.sync(orphansKey); err != nil {
		t.Fatal(err)
	}
	want = append(want, "NodeUnpublishVolume", "NodeUnstageVolume")
	if got := e.node.lifecycle(); !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	if u := e.node.unpub[0]; u.GetTargetPath() != target || u.GetVolumeId() != testHandle {
		t.Errorf("unpublish %v", u)
	}
	if u := e.node.unst[0]; u.GetStagingTargetPath() != StagingPath(e.dir, testDriver, testHandle) {
		t.Errorf("unstage %v", u)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "pods", "uid-1")); !os.IsNotExist(err) {
		t.Errorf("pod directory left behind: %v", err)
	}
}

func TestMissingDriverBacksOff(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(), pvDriver: "missing.example.com",
		driver: storagev1.CSIDriverSpec{AttachRequired: ptr(false)}})
	var waits []time.Duration
	for range 4 {
		err := e.sync("default/app")
		var again controller.RequeueAfter
		if !errors.As(err, &again) {
			t.Fatalf("sync = %v, want a requeue", err)
		}
		waits = append(waits, time.Duration(again))
		// Woken early (say by a node update): still waiting, no new try.
		if err := e.sync("default/app"); !errors.As(err, &again) || time.Duration(again) != waits[len(waits)-1] {
			t.Fatalf("early sync = %v, want the same wait", err)
		}
		e.clock.Step(time.Duration(again))
	}
	if !slices.Equal(waits, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}) {
		t.Errorf("backoff %v", waits)
	}
	evs := e.events()
	if len(evs) != 1 || evs[0].Reason != "FailedMount" || evs[0].Count != 4 || evs[0].Message !=
		`MountVolume.MountDevice failed for volume "pv-1" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name missing.example.com not found in the list of registered CSI drivers` {
		t.Errorf("events %+v", evs)
	}
	if got := e.node.lifecycle(); len(got) != 0 {
		t.Errorf("the node plugin was called: %v", got)
	}
}

func TestRequiresRepublishAndStats(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(), driver: storagev1.CSIDriverSpec{RequiresRepublish: ptr(true)}})
	e.runningPod()
	e.k.Resync(context.Background())
	if err := e.sync("default/app"); err != nil {
		t.Fatal(err)
	}
	// An ordinary sync (no resync due) publishes nothing.
	if err := e.sync("default/app"); err != nil {
		t.Fatal(err)
	}
	want := []string{"NodeStageVolume", "NodePublishVolume", "NodePublishVolume"}
	if got := e.node.lifecycle(); !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	if a, b := e.node.pub[0], e.node.pub[1]; a.GetTargetPath() != b.GetTargetPath() {
		t.Errorf("republished at %s, first at %s", b.GetTargetPath(), a.GetTargetPath())
	}
	e.k.CollectVolumeStats(context.Background())
	if len(e.node.stats) != 1 || e.node.stats[0].GetVolumePath() != e.node.pub[0].GetTargetPath() || e.node.stats[0].GetVolumeId() != testHandle {
		t.Errorf("stats requests %v", e.node.stats)
	}
}

func TestNoRepublishWithoutRequiresRepublish(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps()})
	e.runningPod()
	e.k.Resync(context.Background())
	if err := e.sync("default/app"); err != nil {
		t.Fatal(err)
	}
	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume"}) {
		t.Fatalf("calls = %v", got)
	}
}

func TestRestartCleansUpUnmountedVolumesOfGonePods(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(), mountCheck: true})
	// Volume directories a previous kubelet left, their mounts gone: one
	// of a pod that no longer exists, one of the pod that does.
	for _, uid := range []string{"gone-uid", "uid-1"} {
		dir := filepath.Join(e.dir, "pods", uid, "volumes/kubernetes.io~csi", testPV)
		if err := os.MkdirAll(filepath.Join(dir, "mount"), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := saveVolumeData(dir, map[string]string{"specVolID": testPV, "volumeHandle": testHandle, "driverName": testDriver}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.k.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := len(e.k.actual.pods())
	if n != 0 {
		t.Fatalf("unmounted volumes were reconstructed: %d pods", n)
	}
	if err := e.sync(orphansKey); err != nil {
		t.Fatal(err)
	}
	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeUnpublishVolume"}) {
		t.Fatalf("calls = %v, want one NodeUnpublishVolume", got)
	}
	if want := filepath.Join(e.dir, "pods/gone-uid/volumes/kubernetes.io~csi", testPV, "mount"); e.node.unpub[0].GetTargetPath() != want {
		t.Errorf("unpublished %s, want %s", e.node.unpub[0].GetTargetPath(), want)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "pods/gone-uid")); !os.IsNotExist(err) {
		t.Errorf("the gone pod's directory is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "pods/uid-1", "volumes/kubernetes.io~csi", testPV, "vol_data.json")); err != nil {
		t.Errorf("the live pod's volume directory was touched: %v", err)
	}
	// Once: a second clean-up does nothing.
	if err := e.sync(orphansKey); err != nil {
		t.Fatal(err)
	}
	if got := e.node.lifecycle(); len(got) != 1 {
		t.Errorf("calls after a second clean-up = %v", got)
	}
}

// usesData is the test pod's container, which uses the volume "data": as a
// mount, or as a device when the volume is raw block (the kubelet sets up
// only volumes a container uses).
func usesData(block bool) corev1.Container {
	c := corev1.Container{Name: "app", Image: "busybox"}
	if block {
		c.VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/data"}}
	} else {
		c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}
	return c
}

// TestReadWriteOncePodInUseOnNode: a second pod on this node using a
// volume whose only access mode is ReadWriteOncePod is refused by the
// kubelet itself, in its words, before any CSI call; a volume that also
// has another mode is left to the driver.
func TestReadWriteOncePodInUseOnNode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		modes   []corev1.PersistentVolumeAccessMode
		refused bool
	}{
		{"ReadWriteOncePod only", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, true},
		{"ReadWriteOnce", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{caps: stageCaps(), modes: tc.modes})
			e.runningPod()
			calls := len(e.node.lifecycle())
			second := e.pod.DeepCopy()
			second.Name, second.UID, second.ResourceVersion = "second", "uid-2", ""
			if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), second, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			e.waitFor("the second pod in the informer", func() bool {
				_, err := e.k.pods.Pods("default").Get("second")
				return err == nil
			})
			err := e.sync("default/second")
			var refusal string
			for _, ev := range e.events() {
				if ev.InvolvedObject.Name == "second" && ev.Reason == "FailedMount" {
					refusal = ev.Message
				}
			}
			if !tc.refused {
				if refusal != "" {
					t.Fatalf("refused: %s", refusal)
				}
				return
			}
			var again controller.RequeueAfter
			if !errors.As(err, &again) {
				t.Fatalf("sync = %v, want a requeue after the backoff", err)
			}
			if want := `MountVolume.SetUp failed for volume "` + testPV + `" : volume uses the ReadWriteOncePod access mode and is already in use by another pod`; refusal != want {
				t.Errorf("event %q, want %q", refusal, want)
			}
			if got := e.node.lifecycle(); len(got) != calls {
				t.Errorf("CSI calls for the second pod: %v", got[calls:])
			}
		})
	}
}
