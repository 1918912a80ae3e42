package healthmonitor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/controller"
)

const driver = "hostpath.csisim.io"

// fakeHealth answers the health calls from health (volume ID → entries;
// list leaves healthy volumes out), pages of one entry, and counts calls.
type fakeHealth struct {
	csi.ControllerClient
	health      map[string][]*csi.VolumeHealth_VolumeHealthEntry
	err         error
	lists, gets []string
}

func (f *fakeHealth) ControllerListVolumeHealth(_ context.Context, req *csi.ControllerListVolumeHealthRequest, _ ...grpc.CallOption) (*csi.ControllerListVolumeHealthResponse, error) {
	f.lists = append(f.lists, req.GetStartingToken())
	if f.err != nil {
		return nil, f.err
	}
	resp := &csi.ControllerListVolumeHealthResponse{}
	for _, id := range []string{"vol-1", "vol-2"} {
		if e := f.health[id]; len(e) > 0 && id > req.GetStartingToken() {
			if len(resp.Entries) == 1 {
				resp.NextToken = resp.Entries[0].VolumeId
				break
			}
			resp.Entries = append(resp.Entries, &csi.VolumeHealth{VolumeId: id, HealthStatuses: e})
		}
	}
	return resp, nil
}

func (f *fakeHealth) ControllerGetVolumeHealth(_ context.Context, req *csi.ControllerGetVolumeHealthRequest, _ ...grpc.CallOption) (*csi.ControllerGetVolumeHealthResponse, error) {
	f.gets = append(f.gets, req.GetVolumeId())
	if f.err != nil {
		return nil, f.err
	}
	return &csi.ControllerGetVolumeHealthResponse{VolumeHealth: &csi.VolumeHealth{VolumeId: req.GetVolumeId(), HealthStatuses: f.health[req.GetVolumeId()]}}, nil
}

func boundPair(n string) (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-" + n, Namespace: "default", UID: types.UID("uid-" + n)},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-" + n}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + n},
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef:               &corev1.ObjectReference{Namespace: "default", Name: claim.Name, UID: claim.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "vol-" + n}}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
	return pv, claim
}

// setup is a monitor over a fake clientset with two bound claims, its
// informers filled.
func setup(t *testing.T, plugin *fakeHealth) (*monitor, *fake.Clientset, informers.SharedInformerFactory) {
	t.Helper()
	pv1, c1 := boundPair("1")
	pv2, c2 := boundPair("2")
	cs := fake.NewClientset(pv1, c1, pv2, c2)
	factory := informers.NewSharedInformerFactory(cs, 0)
	m := newMonitor(driver, cs, factory, plugin, testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	for _, o := range []any{pv1, pv2} {
		if err := factory.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []any{c1, c2} {
		if err := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return m, cs, factory
}

// writes are the claim status updates the monitor made, with what each set.
func writes(cs *fake.Clientset) map[string]*corev1.VolumeHealthStatus {
	out := map[string]*corev1.VolumeHealthStatus{}
	for _, a := range cs.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" {
			c := u.GetObject().(*corev1.PersistentVolumeClaim)
			out[c.Name] = c.Status.HealthStatus
		}
	}
	return out
}

var degraded = []*csi.VolumeHealth_VolumeHealthEntry{{Status: csi.VolumeHealthErrorType_DEGRADED, Reason: "ReplicaLost", Message: "one replica is lost"}}

// While every volume is healthy a round of ListVolumeHealth writes
// nothing; an unhealthy one is recorded on its claim only, with the
// driver's words; listing follows next_token.
func TestCheckByList(t *testing.T) {
	plugin := &fakeHealth{health: map[string][]*csi.VolumeHealth_VolumeHealthEntry{}}
	m, cs, _ := setup(t, plugin)
	m.checkByList(context.Background())
	if w := writes(cs); len(w) != 0 {
		t.Fatalf("healthy volumes: wrote %v, want nothing", w)
	}
	plugin.health["vol-1"] = degraded
	plugin.health["vol-2"] = degraded
	m.checkByList(context.Background())
	w := writes(cs)
	for _, name := range []string{"data-1", "data-2"} {
		h := w[name]
		if h == nil || len(h.HealthConditions) != 1 || h.HealthConditions[0] != (corev1.VolumeHealthCondition{Status: corev1.VolumeHealthDegraded, Reason: "ReplicaLost", Message: "one replica is lost"}) {
			t.Errorf("claim %s: health status %+v, want Degraded ReplicaLost", name, h)
		}
	}
	if want := []string{"", "", "vol-1"}; len(plugin.lists) != len(want) {
		t.Errorf("ListVolumeHealth starting tokens %q, want %q", plugin.lists, want)
	}
}

// A failed list records nothing.
func TestCheckByListFails(t *testing.T) {
	plugin := &fakeHealth{err: errors.New("down")}
	m, cs, _ := setup(t, plugin)
	m.checkByList(context.Background())
	if w := writes(cs); len(w) != 0 {
		t.Fatalf("failed list: wrote %v", w)
	}
}

// A claim that has the condition already is not written again; a volume
// healthy again is written once, with no conditions.
func TestRecordOnlyChanges(t *testing.T) {
	plugin := &fakeHealth{health: map[string][]*csi.VolumeHealth_VolumeHealthEntry{}}
	m, cs, factory := setup(t, plugin)
	claims := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	_, c1 := boundPair("1")
	c1.Status.HealthStatus = &corev1.VolumeHealthStatus{HealthConditions: conditions(degraded)}
	if err := claims.Update(c1); err != nil {
		t.Fatal(err)
	}
	plugin.health["vol-1"] = degraded
	m.checkByList(context.Background())
	if w := writes(cs); len(w) != 0 {
		t.Fatalf("unchanged condition: wrote %v", w)
	}
	delete(plugin.health, "vol-1")
	m.checkByList(context.Background())
	if h, ok := writes(cs)["data-1"]; !ok || h == nil || len(h.HealthConditions) != 0 {
		t.Fatalf("healthy again: wrote %+v (written: %v), want a health status with no conditions", h, ok)
	}
}

// Without LIST_VOLUME_HEALTH the workers take the queue's volumes in turn,
// Workers checks per MonitorInterval (a volume again and again when there
// are fewer), and an unbound volume leaves the queue for good.
func TestWorkers(t *testing.T) {
	plugin := &fakeHealth{health: map[string][]*csi.VolumeHealth_VolumeHealthEntry{"vol-2": degraded}}
	m, cs, factory := setup(t, plugin)
	m.addAll()
	m.runWorkers(context.Background())
	if len(plugin.gets) != Workers || plugin.gets[0] != "vol-1" || plugin.gets[1] != "vol-2" || plugin.gets[2] != "vol-1" {
		t.Fatalf("ControllerGetVolumeHealth of %v, want %d alternating from vol-1", plugin.gets, Workers)
	}
	if w := writes(cs); len(w) != 1 || w["data-2"] == nil {
		t.Fatalf("wrote %v, want data-2's condition alone", w)
	}
	pv1, _ := boundPair("1")
	pv1.Status.Phase = corev1.VolumeReleased
	if err := factory.Core().V1().PersistentVolumes().Informer().GetIndexer().Update(pv1); err != nil {
		t.Fatal(err)
	}
	plugin.gets = nil
	m.runWorkers(context.Background())
	m.addAll()
	m.runWorkers(context.Background())
	for _, id := range plugin.gets {
		if id == "vol-1" {
			t.Fatalf("a released volume was checked: %v", plugin.gets)
		}
	}
}

// fakeCaps answers the start-up check's questions.
type fakeCaps struct {
	csi.IdentityClient
	csi.ControllerClient
	caps []csi.ControllerServiceCapability_RPC_Type
}

func (f *fakeCaps) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest, ...grpc.CallOption) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{Type: &csi.PluginCapability_Service_{
		Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}}}}, nil
}

func (f *fakeCaps) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest, ...grpc.CallOption) (*csi.ControllerGetCapabilitiesResponse, error) {
	resp := &csi.ControllerGetCapabilitiesResponse{}
	for _, c := range f.caps {
		resp.Capabilities = append(resp.Capabilities, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
			Rpc: &csi.ControllerServiceCapability_RPC{Type: c}}})
	}
	return resp, nil
}

// The sidecar exits at start beside a driver without volume health, and
// runs beside one with either capability.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		caps []csi.ControllerServiceCapability_RPC_Type
		runs bool
	}{
		{[]csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_LIST_VOLUMES}, false},
		{[]csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH}, true},
		{[]csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH}, true},
	} {
		f := &fakeCaps{caps: tc.caps}
		d := &controller.Driver{Name: driver, Identity: f, Controller: f, Capabilities: driverinfo.Capabilities{}}
		err := Check(context.Background(), d)
		if tc.runs != (err == nil) || err != nil && !errors.Is(err, controller.ErrExitsAtStart) {
			t.Errorf("capabilities %v: Check = %v, want runs %v (or ErrExitsAtStart)", tc.caps, err, tc.runs)
		}
	}
}
