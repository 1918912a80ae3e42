package resizer

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/csisim/csisim/sim/controller"
)

// fakeModifyCSI answers ControllerModifyVolume as told and keeps the
// requests.
type fakeModifyCSI struct {
	csi.ControllerClient
	err   error
	calls []*csi.ControllerModifyVolumeRequest
}

func (f *fakeModifyCSI) ControllerModifyVolume(_ context.Context, req *csi.ControllerModifyVolumeRequest, _ ...grpc.CallOption) (*csi.ControllerModifyVolumeResponse, error) {
	f.calls = append(f.calls, req)
	return &csi.ControllerModifyVolumeResponse{}, f.err
}

func vac(name string, params map[string]string) *storagev1.VolumeAttributesClass {
	return &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: name}, DriverName: driver, Parameters: params}
}

// modifySetup is a modify controller over a fake clientset with a claim
// bound to pv-1 that asks for class want and has class current.
func modifySetup(t *testing.T, want, current string, st *corev1.ModifyVolumeStatus, plugin *fakeModifyCSI, classes ...*storagev1.VolumeAttributesClass) (*Modifier, *fake.Clientset, *record.FakeRecorder, *testingclock.FakeClock) {
	t.Helper()
	pvc := claim("1Gi")
	if want != "" {
		pvc.Spec.VolumeAttributesClassName = ptr.To(want)
	}
	if current != "" {
		pvc.Status.CurrentVolumeAttributesClassName = ptr.To(current)
	}
	pvc.Status.ModifyVolumeStatus = st
	pv := volume("1Gi", driver)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "expand", Namespace: "default"}, Data: map[string][]byte{"key": []byte("s3cret")}}
	cs := fake.NewClientset(pvc, pv, secret)
	factory := informers.NewSharedInformerFactory(cs, 0)
	events := record.NewFakeRecorder(20)
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := controller.Runtime{Clock: clk, NewQueue: controller.NewQueue, NewQueueWithBackoff: controller.NewQueueWithBackoff,
		NewEventRecorder: func(kubernetes.Interface, string, string) (record.EventRecorder, func()) { return events, func() {} }}
	m := newModifier(Config{DriverName: driver}, cs, factory, plugin, rt)
	vacs := factory.Storage().V1().VolumeAttributesClasses().Informer().GetIndexer()
	for _, c := range classes {
		if err := vacs.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.claims.Add(pvc); err != nil {
		t.Fatal(err)
	}
	if err := m.volumes.Add(pv); err != nil {
		t.Fatal(err)
	}
	return m, cs, events, clk
}

func drain(events *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestModify(t *testing.T) {
	gold, silver := vac("gold", map[string]string{"iops": "3000"}), vac("silver", map[string]string{"iops": "6000"})
	infeasible := &corev1.ModifyVolumeStatus{TargetVolumeAttributesClassName: "silver", Status: corev1.PersistentVolumeClaimModifyVolumeInfeasible}
	tests := []struct {
		name          string
		want, current string
		status        *corev1.ModifyVolumeStatus
		err           error
		classes       []*storagev1.VolumeAttributesClass
		wantCalls     []map[string]string
		wantStatus    *corev1.ModifyVolumeStatus
		wantCurrent   string
		wantPVClass   string
		wantEvents    []string
		wantConds     []corev1.PersistentVolumeClaimConditionType
		wantErr       bool
	}{{
		name: "reached: nothing to do", want: "gold", current: "gold", classes: []*storagev1.VolumeAttributesClass{gold},
		wantCurrent: "gold",
	}, {
		name: "modified", want: "silver", current: "gold", classes: []*storagev1.VolumeAttributesClass{gold, silver},
		wantCalls: []map[string]string{{"iops": "6000"}}, wantCurrent: "silver", wantPVClass: "silver",
		wantEvents: []string{"Normal VolumeModify external resizer is modifying volume data with vac silver",
			"Normal VolumeModifySuccessful external resizer modified volume data with vac silver successfully"},
	}, {
		name: "class missing: Pending", want: "silver", current: "gold", classes: []*storagev1.VolumeAttributesClass{gold},
		wantStatus: &corev1.ModifyVolumeStatus{Status: corev1.PersistentVolumeClaimModifyVolumePending}, wantCurrent: "gold",
		wantEvents: []string{`Warning VolumeModifyFailed VAC "silver" does not exist.`},
	}, {
		name: "InvalidArgument: Infeasible", want: "silver", current: "gold", classes: []*storagev1.VolumeAttributesClass{gold, silver},
		err: status.Error(codes.InvalidArgument, "no such key"), wantErr: true,
		wantCalls: []map[string]string{{"iops": "6000"}}, wantStatus: infeasible, wantCurrent: "gold",
		wantConds: []corev1.PersistentVolumeClaimConditionType{corev1.PersistentVolumeClaimVolumeModifyingVolume, corev1.PersistentVolumeClaimVolumeModifyVolumeError},
		wantEvents: []string{"Normal VolumeModify external resizer is modifying volume data with vac silver",
			"Warning VolumeModifyFailed rpc error: code = InvalidArgument desc = no such key"},
	}, {
		name: "timeout: still in progress", want: "silver", current: "gold", classes: []*storagev1.VolumeAttributesClass{gold, silver},
		err: status.Error(codes.DeadlineExceeded, "slow"), wantErr: true, wantCalls: []map[string]string{{"iops": "6000"}},
		wantStatus:  &corev1.ModifyVolumeStatus{TargetVolumeAttributesClassName: "silver", Status: corev1.PersistentVolumeClaimModifyVolumeInProgress},
		wantCurrent: "gold",
		wantConds:   []corev1.PersistentVolumeClaimConditionType{corev1.PersistentVolumeClaimVolumeModifyingVolume, corev1.PersistentVolumeClaimVolumeModifyVolumeError},
		wantEvents: []string{"Normal VolumeModify external resizer is modifying volume data with vac silver",
			"Warning VolumeModifyFailed rpc error: code = DeadlineExceeded desc = slow. Still modifying to VAC silver"},
	}, {
		name: "back to the old class after Infeasible", want: "gold", current: "gold", status: infeasible,
		classes: []*storagev1.VolumeAttributesClass{gold, silver}, wantCalls: []map[string]string{{"iops": "3000"}},
		wantCurrent: "gold", wantPVClass: "gold",
		wantEvents: []string{"Normal VolumeModify external resizer is modifying volume data with vac gold",
			"Normal VolumeModifySuccessful external resizer modified volume data with vac gold successfully"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plugin := &fakeModifyCSI{err: tc.err}
			m, cs, events, _ := modifySetup(t, tc.want, tc.current, tc.status, plugin, tc.classes...)
			err := m.syncClaim(context.Background(), "default/data")
			if (err != nil) != tc.wantErr {
				t.Fatalf("syncClaim: %v, want error %v", err, tc.wantErr)
			}
			var calls []map[string]string
			for _, c := range plugin.calls {
				if c.GetVolumeId() != "vol-1" || c.GetSecrets()["key"] != "s3cret" {
					t.Errorf("call %v: want volume vol-1 and the expand secret", c)
				}
				calls = append(calls, c.GetMutableParameters())
			}
			if len(calls) != len(tc.wantCalls) || (len(calls) > 0 && calls[0]["iops"] != tc.wantCalls[0]["iops"]) {
				t.Errorf("calls %v, want %v", calls, tc.wantCalls)
			}
			got, _ := cs.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "data", metav1.GetOptions{})
			if s := got.Status.ModifyVolumeStatus; (s == nil) != (tc.wantStatus == nil) || (s != nil && *s != *tc.wantStatus) {
				t.Errorf("modifyVolumeStatus %+v, want %+v", s, tc.wantStatus)
			}
			if c := ptr.Deref(got.Status.CurrentVolumeAttributesClassName, ""); c != tc.wantCurrent {
				t.Errorf("current class %q, want %q", c, tc.wantCurrent)
			}
			var conds []corev1.PersistentVolumeClaimConditionType
			for _, c := range got.Status.Conditions {
				conds = append(conds, c.Type)
			}
			if !slices.Equal(conds, tc.wantConds) {
				t.Errorf("conditions %v, want %v", conds, tc.wantConds)
			}
			pv, _ := cs.CoreV1().PersistentVolumes().Get(context.Background(), "pv-1", metav1.GetOptions{})
			if c := ptr.Deref(pv.Spec.VolumeAttributesClassName, ""); c != tc.wantPVClass {
				t.Errorf("PV class %q, want %q", c, tc.wantPVClass)
			}
			if got := drain(events); !slices.Equal(got, tc.wantEvents) {
				t.Errorf("events\n%q\nwant\n%q", got, tc.wantEvents)
			}
		})
	}
}

// An infeasible claim that still asks for the same class is held back
// until RetryIntervalMax has passed since its first infeasible try.
func TestModifyInfeasibleWaits(t *testing.T) {
	infeasible := &corev1.ModifyVolumeStatus{TargetVolumeAttributesClassName: "silver", Status: corev1.PersistentVolumeClaimModifyVolumeInfeasible}
	plugin := &fakeModifyCSI{err: status.Error(codes.InvalidArgument, "no such key")}
	m, _, _, clk := modifySetup(t, "silver", "gold", infeasible, plugin, vac("gold", nil), vac("silver", map[string]string{"tier": "x"}))
	m.slow.add("default/data")
	for _, after := range []time.Duration{time.Second, RetryIntervalMax - 2*time.Second} {
		clk.Step(after)
		if err := m.syncClaim(context.Background(), "default/data"); err == nil || len(plugin.calls) != 0 {
			t.Fatalf("after %v: err %v, %d calls; want held back", after, err, len(plugin.calls))
		}
	}
	clk.Step(2 * time.Second)
	_ = m.syncClaim(context.Background(), "default/data")
	if len(plugin.calls) != 1 {
		t.Fatalf("after RetryIntervalMax: %d calls, want 1", len(plugin.calls))
	}
}

// Only claims a sync could act on are queued; a bound claim whose class
// changed is.
func TestModifyHandlers(t *testing.T) {
	m, _, _, _ := modifySetup(t, "", "", nil, &fakeModifyCSI{})
	plain := claim("1Gi")
	m.claimAdded(plain)
	if m.queue.Len() != 0 {
		t.Fatalf("a claim without classes was queued")
	}
	gold := plain.DeepCopy()
	gold.Spec.VolumeAttributesClassName = ptr.To("gold")
	m.claimUpdated(plain, gold)
	if m.queue.Len() != 1 {
		t.Fatalf("a bound claim that names a class was not queued")
	}
}
