package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCSINodeWakes(t *testing.T) {
	csiNode := func(migrated string, counts ...int32) *storagev1.CSINode {
		n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		if migrated != "" {
			n.Annotations[corev1.MigratedPluginsAnnotationKey] = migrated
		}
		for i, c := range counts {
			d := storagev1.CSINodeDriver{Name: string(rune('a' + i))}
			if c > 0 {
				d.Allocatable = &storagev1.VolumeNodeResources{Count: &c}
			}
			n.Spec.Drivers = append(n.Spec.Drivers, d)
		}
		return n
	}
	limits := attempt{plugins: map[string]bool{"NodeVolumeLimits": true}}
	binding := attempt{plugins: map[string]bool{"VolumeBinding": true}}
	tests := []struct {
		name                  string
		old, cur              *storagev1.CSINode
		wantLimits, wantBound bool
	}{
		{"a new CSINode", nil, csiNode("", 2), true, true},
		{"a limit grows", csiNode("", 2), csiNode("", 3), true, false},
		{"a limit shrinks", csiNode("", 3), csiNode("", 1), false, false},
		{"a driver with a limit comes", csiNode("", 2), csiNode("", 2, 1), true, false},
		{"a driver goes", csiNode("", 2, 1), csiNode("", 2), false, false},
		{"a limit goes", csiNode("", 2), csiNode("", 0), false, false},
		{"the migrated plugins change", csiNode("", 2), csiNode("kubernetes.io/gce-pd", 2), false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wakes := csiNodeWakes(tc.old, tc.cur)
			if got := wakes(nil, limits); got != tc.wantLimits {
				t.Errorf("a pod NodeVolumeLimits rejected: woken %t, want %t", got, tc.wantLimits)
			}
			if got := wakes(nil, binding); got != tc.wantBound {
				t.Errorf("a pod VolumeBinding rejected: woken %t, want %t", got, tc.wantBound)
			}
		})
	}
}
