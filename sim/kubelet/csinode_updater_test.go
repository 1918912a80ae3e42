package kubelet

import (
	"context"
	"errors"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csisim/csisim/sim/controller"
)

// The kubelet asks NodeGetInfo every nodeAllocatableUpdatePeriodSeconds
// and writes the CSINode's count when it changed, and not at all without
// a period.
func TestCSINodeUpdater(t *testing.T) {
	two := int32(2)
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: testNode}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: testDriver, NodeID: testNode, Allocatable: &storagev1.VolumeNodeResources{Count: &two}}}}}
	period := int64(10)
	for _, tc := range []struct {
		name   string
		period *int64
		want   []string // the counts seen after each tick
	}{
		{"every 10 s", &period, []string{"3", "1"}},
		{"no period", nil, []string{"2", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{driver: storagev1.CSIDriverSpec{NodeAllocatableUpdatePeriodSeconds: tc.period},
				extra: []runtime.Object{csiNode.DeepCopy()}})
			e.k.syncCSINodeUpdater(testDriver)
			for i, limit := range []int64{3, 1} {
				e.node.mu.Lock()
				e.node.maxVolumes = limit
				e.node.mu.Unlock()
				err := e.sync(csiNodeUpdaterKey)
				var again controller.RequeueAfter
				switch {
				case tc.period == nil && err != nil:
					t.Fatalf("tick %d without a period: %v", i, err)
				case tc.period != nil && (!errors.As(err, &again) || time.Duration(again) != 10*time.Second):
					t.Fatalf("tick %d: %v, want a requeue after 10s", i, err)
				}
				if i == 0 && len(e.node.calls) > 0 {
					t.Fatalf("calls before the first tick: %v", e.node.calls)
				}
				e.clock.Step(10 * time.Second)
				_ = e.sync(csiNodeUpdaterKey)
				got, err := e.client.StorageV1().CSINodes().Get(context.Background(), testNode, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if c := got.Spec.Drivers[0].Allocatable.Count; c == nil || string(rune('0'+*c)) != tc.want[i] {
					t.Errorf("after tick %d: count %v, want %s", i, c, tc.want[i])
				}
			}
		})
	}
}
