package kubelet

import (
	"context"
	"os"
	"path/filepath"
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

// The test harness of the package: a kubelet on fake clients and a fake
// node plugin that records what it is asked.

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
	// unpubErr, if set, is what NodeUnpublishVolume answers.
	unpubErr error
	// onUnpublish, if set, runs when NodeUnpublishVolume is called.
	onUnpublish func(*csi.NodeUnpublishVolumeRequest)
	// maxVolumes is what NodeGetInfo reports as max_volumes_per_node.
	maxVolumes int64
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
	f.mu.Lock()
	defer f.mu.Unlock()
	return &csi.NodeGetInfoResponse{NodeId: testNode, MaxVolumesPerNode: f.maxVolumes}, nil
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
	err, hook := f.unpubErr, f.onUnpublish
	f.mu.Unlock()
	if hook != nil {
		hook(r)
	}
	if err != nil {
		return nil, err
	}
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
	// inTree makes the pod's volume "data" this inline in-tree volume
	// instead of the claim; driverName is the kubelet's driver (and its
	// CSIDriver's) name if it is not testDriver.
	inTree     *corev1.VolumeSource
	driverName string
	// noCSIDriver leaves the CSIDriver object out.
	noCSIDriver bool
	// container, if set, is the pod's container instead of usesData's.
	container *corev1.Container
	// ephemeral makes the pod's volume "data" a generic ephemeral one,
	// whose claim is app-data, owned by the pod unless foreignClaim.
	ephemeral, foreignClaim bool
	// seLinux: the node has SELinux enabled; podSecurity, if set, is the
	// pod's security context (fsGroup then comes from it); mountOptions
	// are the PV's.
	seLinux      bool
	podSecurity  *corev1.PodSecurityContext
	mountOptions []string
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
	kubeletDriver := testDriver
	if o.driverName != "" {
		kubeletDriver = o.driverName
	}
	drv := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: kubeletDriver}, Spec: o.driver}
	if o.container != nil {
		pod.Spec.Containers = []corev1.Container{*o.container}
	}
	if o.podSecurity != nil {
		pod.Spec.SecurityContext = o.podSecurity
	}
	pv.Spec.MountOptions = o.mountOptions
	if o.inline != nil {
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{CSI: o.inline}}}
	}
	if o.inTree != nil {
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: *o.inTree}}
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
			return controller.NewSyncEventRecorder(c, component, host, clk, nil, nil), func() {}
		}}
	fn := &fakeNode{caps: o.caps}
	dir := t.TempDir()
	k := New(Config{NodeName: testNode, DriverName: kubeletDriver, Dir: dir, SkipMountCheck: !o.mountCheck, SELinuxEnabled: o.seLinux}, client, factory, factory, fn, rt)
	k.desired.markReportedInUse([]corev1.UniqueVolumeName{unique})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return &env{t: t, k: k, client: client, node: fn, clock: clk, dir: dir, pod: pod, factory: factory}
}

// sync runs the kubelet's sync of the pod (or another key) once.
// reportStatus posts the node's status, as the kubelet's status loop does
// every 10 s: the volumes its pods want are reported in use, and only then
// mounted.
func (e *env) reportStatus() {
	e.t.Helper()
	if err := e.k.postReady(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

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
