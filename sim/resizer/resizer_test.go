package resizer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/volumeutil"
)

const driver = "hostpath.csisim.io"

// fakeCSI answers ControllerExpandVolume as told and keeps the requests.
type fakeCSI struct {
	csi.ControllerClient
	nodeRequired bool
	err          error
	calls        []*csi.ControllerExpandVolumeRequest
}

func (f *fakeCSI) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest, ...grpc.CallOption) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{}, nil
}

func (f *fakeCSI) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest, _ ...grpc.CallOption) (*csi.ControllerExpandVolumeResponse, error) {
	f.calls = append(f.calls, req)
	if f.err != nil {
		return nil, f.err
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: req.GetCapacityRange().GetRequiredBytes(), NodeExpansionRequired: f.nodeRequired}, nil
}

func claim(request string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "claim-uid", ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeName: "pv-1",
			Resources:  corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
}

func volume(capacity, drv string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1", ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			ClaimRef:    &corev1.ObjectReference{Namespace: "default", Name: "data", UID: "claim-uid"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: drv, VolumeHandle: "vol-1",
				ControllerExpandSecretRef: &corev1.SecretReference{Namespace: "default", Name: "expand"}}},
		},
	}
}

type setup struct {
	r      *Resizer
	cs     *fake.Clientset
	csi    *fakeCSI
	events *record.FakeRecorder
	clock  *testingclock.FakeClock
}

func newSetup(t *testing.T, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, plugin *fakeCSI) *setup {
	t.Helper()
	return newSetupFor(t, driver, pvc, pv, plugin)
}

// newSetupFor is newSetup with the resizer of the driver named.
func newSetupFor(t *testing.T, driverName string, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, plugin *fakeCSI) *setup {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "expand", Namespace: "default"}, Data: map[string][]byte{"key": []byte("s3cret")}}
	cs := fake.NewClientset(pvc, pv, secret)
	factory := informers.NewSharedInformerFactory(cs, 0)
	events := record.NewFakeRecorder(20)
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := controller.Runtime{Clock: clk, NewQueue: controller.NewQueue, NewQueueWithBackoff: controller.NewQueueWithBackoff,
		NewEventRecorder: func(kubernetes.Interface, string, string) (record.EventRecorder, func()) { return events, func() {} }}
	r := newResizer(Config{DriverName: driverName}, cs, factory, plugin, rt)
	r.controllerExpand = true
	if err := r.claims.Add(pvc); err != nil {
		t.Fatal(err)
	}
	if err := r.volumes.Add(pv); err != nil {
		t.Fatal(err)
	}
	return &setup{r: r, cs: cs, csi: plugin, events: events, clock: clk}
}

func (s *setup) claim(t *testing.T) *corev1.PersistentVolumeClaim {
	c, err := s.cs.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (s *setup) volume(t *testing.T) *corev1.PersistentVolume {
	v, err := s.cs.CoreV1().PersistentVolumes().Get(context.Background(), "pv-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (s *setup) eventList() []string {
	var out []string
	for {
		select {
		case e := <-s.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func conditionTypes(c *corev1.PersistentVolumeClaim) []string {
	var out []string
	for _, cond := range c.Status.Conditions {
		out = append(out, string(cond.Type))
	}
	return out
}

func TestSyncClaim(t *testing.T) {
	infeasible := status.Error(codes.OutOfRange, "too big")
	tests := []struct {
		name    string
		claim   func() *corev1.PersistentVolumeClaim
		pv      *corev1.PersistentVolume
		plugin  *fakeCSI
		trivial bool
		slow    bool
		// wantSizes are the sizes ControllerExpandVolume was asked for.
		wantSizes      []string
		wantErr        string
		wantRequeue    bool
		wantCapacity   string
		wantPV         string
		wantAllocated  string
		wantStatus     corev1.ClaimResourceStatus
		wantConditions []string
		wantEvents     []string
		wantAnnotated  bool // node-expansion-not-required
		wantPreResize  string
	}{
		{
			name: "the controller finishes", claim: func() *corev1.PersistentVolumeClaim { return claim("2Gi") },
			pv: volume("1Gi", driver), plugin: &fakeCSI{},
			wantSizes: []string{"2Gi"}, wantCapacity: "2Gi", wantPV: "2Gi", wantAllocated: "2Gi", wantAnnotated: true,
			wantEvents: []string{"Normal Resizing External resizer is resizing volume pv-1", "Normal VolumeResizeSuccessful Resize volume succeeded"},
		},
		{
			name: "the node must finish", claim: func() *corev1.PersistentVolumeClaim { return claim("2Gi") },
			pv: volume("1Gi", driver), plugin: &fakeCSI{nodeRequired: true},
			wantSizes: []string{"2Gi"}, wantCapacity: "1Gi", wantPV: "2Gi", wantAllocated: "2Gi", wantPreResize: "1Gi",
			wantStatus: corev1.PersistentVolumeClaimNodeResizePending, wantConditions: []string{"Resizing", "FileSystemResizePending"},
			wantEvents: []string{"Normal Resizing External resizer is resizing volume pv-1", "Normal FileSystemResizeRequired Require file system resize of volume on node"},
		},
		{
			name: "an infeasible size", claim: func() *corev1.PersistentVolumeClaim { return claim("2Gi") },
			pv: volume("1Gi", driver), plugin: &fakeCSI{err: infeasible},
			wantSizes: []string{"2Gi"}, wantCapacity: "1Gi", wantPV: "1Gi", wantAllocated: "2Gi",
			wantErr:    `resize volume "pv-1" by resizer "hostpath.csisim.io" failed: rpc error: code = OutOfRange desc = too big`,
			wantStatus: corev1.PersistentVolumeClaimControllerResizeInfeasible, wantConditions: []string{"Resizing", "ControllerResizeError"},
			wantEvents: []string{"Normal Resizing External resizer is resizing volume pv-1",
				`Warning VolumeResizeFailed resize volume "pv-1" by resizer "hostpath.csisim.io" failed: rpc error: code = OutOfRange desc = too big`},
		},
		{
			name: "a retryable error", claim: func() *corev1.PersistentVolumeClaim { return claim("2Gi") },
			pv: volume("1Gi", driver), plugin: &fakeCSI{err: status.Error(codes.Unavailable, "busy")},
			wantSizes: []string{"2Gi"}, wantCapacity: "1Gi", wantPV: "1Gi", wantAllocated: "2Gi",
			wantErr:    `rpc error: code = Unavailable desc = busy`,
			wantStatus: corev1.PersistentVolumeClaimControllerResizeInProgress, wantConditions: []string{"Resizing"},
			wantEvents: []string{"Normal Resizing External resizer is resizing volume pv-1",
				`Warning VolumeResizeFailed resize volume "pv-1" by resizer "hostpath.csisim.io" failed: rpc error: code = Unavailable desc = busy`},
		},
		{
			name: "recovery: a lower request after an infeasible one",
			claim: func() *corev1.PersistentVolumeClaim {
				c := claim("1536Mi")
				c.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
				c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInfeasible}
				return c
			},
			pv: volume("1Gi", driver), plugin: &fakeCSI{}, slow: true,
			wantSizes: []string{"1536Mi"}, wantCapacity: "1536Mi", wantPV: "1536Mi", wantAllocated: "1536Mi", wantAnnotated: true,
			wantEvents: []string{"Normal Resizing External resizer is resizing volume pv-1", "Normal VolumeResizeSuccessful Resize volume succeeded"},
		},
		{
			name: "the same infeasible size waits",
			claim: func() *corev1.PersistentVolumeClaim {
				c := claim("2Gi")
				c.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
				c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInfeasible}
				return c
			},
			pv: volume("1Gi", driver), plugin: &fakeCSI{}, slow: true, wantRequeue: true,
			wantCapacity: "1Gi", wantPV: "1Gi", wantAllocated: "2Gi", wantStatus: corev1.PersistentVolumeClaimControllerResizeInfeasible,
		},
		{
			name: "the node's turn",
			claim: func() *corev1.PersistentVolumeClaim {
				c := claim("2Gi")
				c.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
				c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending}
				return c
			},
			pv: volume("2Gi", driver), plugin: &fakeCSI{},
			wantCapacity: "1Gi", wantPV: "2Gi", wantAllocated: "2Gi", wantStatus: corev1.PersistentVolumeClaimNodeResizePending,
		},
		{
			name: "a driver with node expansion only", claim: func() *corev1.PersistentVolumeClaim { return claim("2Gi") },
			pv: volume("1Gi", driver), plugin: &fakeCSI{}, trivial: true,
			wantCapacity: "1Gi", wantPV: "2Gi", wantAllocated: "2Gi", wantPreResize: "1Gi",
			wantStatus: corev1.PersistentVolumeClaimNodeResizePending, wantConditions: []string{"Resizing", "FileSystemResizePending"},
			wantEvents: []string{"Normal Resizing External resizer is resizing volume pv-1", "Normal FileSystemResizeRequired Require file system resize of volume on node"},
		},
		{
			name: "another driver's volume", claim: func() *corev1.PersistentVolumeClaim { return claim("2Gi") },
			pv: volume("1Gi", "other.example.com"), plugin: &fakeCSI{},
			wantCapacity: "1Gi", wantPV: "1Gi",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSetup(t, tt.claim(), tt.pv, tt.plugin)
			s.r.controllerExpand = !tt.trivial
			if tt.slow {
				s.r.slow.add("default/data")
				s.clock.Step(time.Second)
			}
			err := s.r.syncClaim(context.Background(), "default/data")
			var again controller.RequeueAfter
			switch {
			case tt.wantRequeue:
				if !errors.As(err, &again) || time.Duration(again) != RetryIntervalMax-time.Second {
					t.Errorf("sync: %v, want a requeue after %s", err, RetryIntervalMax-time.Second)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("sync: %v, want an error with %q", err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("sync: %v", err)
			}
			var sizes []string
			for _, c := range tt.plugin.calls {
				sizes = append(sizes, resource.NewQuantity(c.GetCapacityRange().GetRequiredBytes(), resource.BinarySI).String())
				if c.GetSecrets()["key"] != "s3cret" || c.GetVolumeId() != "vol-1" {
					t.Errorf("call %v: want volume vol-1 with the controller-expand secret", c)
				}
			}
			if !slices.Equal(sizes, tt.wantSizes) {
				t.Errorf("ControllerExpandVolume sizes %v, want %v", sizes, tt.wantSizes)
			}
			c, pv := s.claim(t), s.volume(t)
			if got := c.Status.Capacity.Storage().String(); got != tt.wantCapacity {
				t.Errorf("claim capacity %s, want %s", got, tt.wantCapacity)
			}
			if got := pv.Spec.Capacity.Storage().String(); got != tt.wantPV {
				t.Errorf("PV capacity %s, want %s", got, tt.wantPV)
			}
			if got, ok := c.Status.AllocatedResources[corev1.ResourceStorage]; tt.wantAllocated == "" && ok || tt.wantAllocated != "" && got.String() != tt.wantAllocated {
				t.Errorf("allocatedResources %v, want storage %q", c.Status.AllocatedResources, tt.wantAllocated)
			}
			if got := c.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; got != tt.wantStatus {
				t.Errorf("allocatedResourceStatuses %v, want storage %q", c.Status.AllocatedResourceStatuses, tt.wantStatus)
			}
			if got := conditionTypes(c); !slices.Equal(got, tt.wantConditions) {
				t.Errorf("conditions %v, want %v", got, tt.wantConditions)
			}
			if got := c.Annotations[volumeutil.AnnNodeExpansionNotRequired] == "true"; got != tt.wantAnnotated {
				t.Errorf("annotations %v: node-expansion-not-required %t, want %t", c.Annotations, got, tt.wantAnnotated)
			}
			if got := pv.Annotations[volumeutil.AnnPreResizeCapacity]; got != tt.wantPreResize {
				t.Errorf("PV pre-resize-capacity %q, want %q", got, tt.wantPreResize)
			}
			if got := s.eventList(); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events\n got %q\nwant %q", got, tt.wantEvents)
			}
		})
	}
}

func TestMergeConditions(t *testing.T) {
	cond := func(t corev1.PersistentVolumeClaimConditionType, msg string) corev1.PersistentVolumeClaimCondition {
		return corev1.PersistentVolumeClaimCondition{Type: t, Status: corev1.ConditionTrue, Message: msg}
	}
	old := []corev1.PersistentVolumeClaimCondition{cond("Unused", ""), cond(corev1.PersistentVolumeClaimResizing, "old"),
		cond(corev1.PersistentVolumeClaimControllerResizeError, "failed")}
	added := []corev1.PersistentVolumeClaimCondition{cond(corev1.PersistentVolumeClaimResizing, "new"),
		cond(corev1.PersistentVolumeClaimFileSystemResizePending, "fs")}
	describe := func(cs []corev1.PersistentVolumeClaimCondition) string {
		var out []string
		for _, c := range cs {
			out = append(out, string(c.Type)+"="+c.Message)
		}
		return strings.Join(out, " ")
	}
	if got, want := describe(mergeConditions(old, added, true)), "Unused= Resizing=new ControllerResizeError=failed FileSystemResizePending=fs"; got != want {
		t.Errorf("keeping old: %s, want %s", got, want)
	}
	if got, want := describe(mergeConditions(old, added, false)), "Unused= Resizing=new FileSystemResizePending=fs"; got != want {
		t.Errorf("dropping old: %s, want %s", got, want)
	}
}
