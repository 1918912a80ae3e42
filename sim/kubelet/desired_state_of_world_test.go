package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestDesiredStateSizes(t *testing.T) {
	const u = corev1.UniqueVolumeName("kubernetes.io/csi/d^v")
	tests := []struct {
		name     string
		known    string // "" if no size is known yet
		pvSize   string
		readOnly bool
		want     string
	}{
		{name: "first pod, writable", pvSize: "2Gi", want: "2Gi"},
		{name: "first pod, read-only", pvSize: "2Gi", readOnly: true, want: "2Gi"},
		{name: "writable pod updates", known: "1Gi", pvSize: "2Gi", want: "2Gi"},
		{name: "read-only pod does not", known: "1Gi", pvSize: "2Gi", readOnly: true, want: "1Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d desiredState
			d.reset()
			if tt.known != "" {
				d.updateSize(u, resource.MustParse(tt.known), false)
			}
			d.updateSize(u, resource.MustParse(tt.pvSize), tt.readOnly)
			got, ok := d.size(u)
			if want := resource.MustParse(tt.want); !ok || got.Cmp(want) != 0 {
				t.Errorf("size %s (known %v), want %s", got.String(), ok, tt.want)
			}
		})
	}
}

func TestDesiredStateVolumesAndReports(t *testing.T) {
	a, b, c := corev1.UniqueVolumeName("a"), corev1.UniqueVolumeName("b"), corev1.UniqueVolumeName("c")
	var d desiredState
	d.reset()
	d.setPodVolumes("pod-1", []corev1.UniqueVolumeName{a, b})
	d.setPodVolumes("pod-2", []corev1.UniqueVolumeName{b, c})
	d.setPodVolumes("pod-2", []corev1.UniqueVolumeName{c}) // replaces
	d.deletePod("pod-1")
	if got := d.volumes(); len(got) != 1 || !got[c] {
		t.Errorf("volumes %v, want only %s", got, c)
	}
	if !d.markReportedInUse([]corev1.UniqueVolumeName{a}) {
		t.Error("a first report is a change")
	}
	if d.markReportedInUse([]corev1.UniqueVolumeName{a}) {
		t.Error("the same report again is no change")
	}
	if !d.isReportedInUse(a) || d.isReportedInUse(b) {
		t.Error("reported in use: want a, not b")
	}
	d.reset()
	if d.isReportedInUse(a) || len(d.volumes()) != 0 {
		t.Error("a reset state still has something")
	}
}
