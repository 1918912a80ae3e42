package diff

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// timerSim is a simulation with one timer: at fireAt its state changes.
type timerSim struct {
	clk    *testingclock.FakeClock
	fireAt time.Time
}

func (s *timerSim) Clock() *testingclock.FakeClock { return s.clk }
func (s *timerSim) RunUntil(context.Context, time.Duration, func() (bool, error)) error {
	return nil
}
func (s *timerSim) RunFor(_ context.Context, d time.Duration) error {
	s.clk.Step(d)
	return nil
}

func (s *timerSim) snapshot() (Snapshot, error) {
	phase := "Pending"
	if !s.clk.Now().Before(s.fireAt) {
		phase = "Running"
	}
	return Snapshot{Objects: map[string]Object{"pod": {Kind: "Pod", Name: "p", Exists: true, Phase: phase}}}, nil
}

func TestSettleVirtual(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		until     time.Duration // after t0
		wantPhase string
	}{
		// Quiet alone: a second of quiet passes before the timer at 3 s.
		{"quiet alone", 0, "Pending"},
		// The real snapshot was taken at 4 s: the timer has fired.
		{"until the real snapshot's time", 4 * time.Second, "Running"},
	} {
		sim := &timerSim{clk: testingclock.NewFakeClock(t0), fireAt: t0.Add(3 * time.Second)}
		if !settleVirtual(context.Background(), sim, sim.snapshot, t0.Add(tc.until), time.Second, 15*time.Second) {
			t.Errorf("%s: did not settle", tc.name)
			continue
		}
		s, _ := sim.snapshot()
		if got := s.Objects["pod"].Phase; got != tc.wantPhase {
			t.Errorf("%s: settled at %v with the pod %s, want %s", tc.name, sim.clk.Since(t0), got, tc.wantPhase)
		}
		if sim.clk.Now().Before(t0.Add(tc.until)) {
			t.Errorf("%s: settled at %v, before %v", tc.name, sim.clk.Since(t0), tc.until)
		}
	}
}

func TestAwaitsStatusSync(t *testing.T) {
	pvc := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}
	pv := corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}
	pod := func(phase corev1.PodPhase, node string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
			Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{{Name: "data",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	node := func(inUse ...corev1.UniqueVolumeName) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{VolumesInUse: inUse}}
	}
	for _, tc := range []struct {
		name string
		objs Objects
		want bool
	}{
		{"nothing", Objects{Nodes: []corev1.Node{node()}}, false},
		{"pod not scheduled", Objects{Pods: []corev1.Pod{pod(corev1.PodPending, "")}, Nodes: []corev1.Node{node()}}, false},
		{"pod bound, pending", Objects{Pods: []corev1.Pod{pod(corev1.PodPending, "node-1")}, Nodes: []corev1.Node{node()}}, true},
		{"pod running, volume in use", Objects{PVCs: []corev1.PersistentVolumeClaim{pvc}, PVs: []corev1.PersistentVolume{pv},
			Pods: []corev1.Pod{pod(corev1.PodRunning, "node-1")}, Nodes: []corev1.Node{node("kubernetes.io/csi/d^h")}}, false},
		{"pod gone, volume still in use", Objects{PVCs: []corev1.PersistentVolumeClaim{pvc}, PVs: []corev1.PersistentVolume{pv},
			Nodes: []corev1.Node{node("kubernetes.io/csi/d^h")}}, true},
	} {
		if got := awaitsStatusSync(tc.objs); got != tc.want {
			t.Errorf("%s: awaitsStatusSync = %v, want %v", tc.name, got, tc.want)
		}
	}
}
