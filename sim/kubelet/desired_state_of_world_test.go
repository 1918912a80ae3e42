package kubelet

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
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
	d.setPodVolumes("pod-1", []corev1.UniqueVolumeName{a, b}, nil)
	d.setPodVolumes("pod-2", []corev1.UniqueVolumeName{b, c}, nil)
	d.setPodVolumes("pod-2", []corev1.UniqueVolumeName{c}, nil) // replaces
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

// A volume's SELinux label is the first pod's; a pod not yet among its
// pods conflicts if it wants another, one already among them does not;
// the label goes with the volume's last pod.
func TestDesiredStateSELinuxLabels(t *testing.T) {
	const u = corev1.UniqueVolumeName("u")
	tests := []struct {
		name     string
		pods     map[types.UID]string // pods that have u, with their labels, added in name order
		uid      types.UID
		label    string
		conflict bool
		existing string
	}{
		{name: "no pod has it", uid: "b", label: "x"},
		{name: "same label", pods: map[types.UID]string{"a": "x"}, uid: "b", label: "x", existing: "x"},
		{name: "other label", pods: map[types.UID]string{"a": "x"}, uid: "b", label: "y", conflict: true, existing: "x"},
		{name: "no label against one", pods: map[types.UID]string{"a": "x"}, uid: "b", label: "", conflict: true, existing: "x"},
		{name: "the first pod's label", pods: map[types.UID]string{"a": "x", "b": "y"}, uid: "c", label: "y", conflict: true, existing: "x"},
		{name: "a pod already among them", pods: map[types.UID]string{"a": "x", "b": "y"}, uid: "b", label: "y", existing: "x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d desiredState
			d.reset()
			for _, uid := range slices.Sorted(maps.Keys(tc.pods)) {
				d.setPodVolumes(uid, []corev1.UniqueVolumeName{u}, map[corev1.UniqueVolumeName]string{u: tc.pods[uid]})
			}
			existing, conflict := d.seLinuxConflict(tc.uid, u, tc.label)
			if conflict != tc.conflict || (conflict && existing != tc.existing) {
				t.Errorf("conflict %v with %q, want %v with %q", conflict, existing, tc.conflict, tc.existing)
			}
			if len(tc.pods) > 0 && d.seLinuxLabel(u) != tc.existing {
				t.Errorf("label %q, want %q", d.seLinuxLabel(u), tc.existing)
			}
			for uid := range tc.pods {
				d.deletePod(uid)
			}
			if d.seLinuxLabel(u) != "" || len(d.seLinux) != 0 {
				t.Errorf("labels %v left when no pod has the volume", d.seLinux)
			}
		})
	}
}

// A volume that leaves the desired state (its last pod went) and comes
// back with another pod is a new entry, as in the real one's
// AddPodToVolume: not reported in use until a node status says so again,
// so it is not mounted on the strength of the last pod's report — which a
// slow status write may already have contradicted (nemesis seed 151 of
// kubelet-selinux-mount: the volume staged for the second pod while the
// node's status said it was not in use, and the attach/detach controller
// detached it under the pod).
func TestAVolumeBackInTheDesiredStateIsNotReported(t *testing.T) {
	a, b := corev1.UniqueVolumeName("a"), corev1.UniqueVolumeName("b")
	var d desiredState
	d.reset()
	d.setPodVolumes("pod-1", []corev1.UniqueVolumeName{a, b}, nil)
	d.setPodVolumes("pod-2", []corev1.UniqueVolumeName{b}, nil)
	d.markReportedInUse([]corev1.UniqueVolumeName{a, b})
	d.deletePod("pod-1")
	if !d.isReportedInUse(b) {
		t.Error("b, still wanted by pod-2, lost its report")
	}
	d.setPodVolumes("pod-3", []corev1.UniqueVolumeName{a}, nil)
	if d.isReportedInUse(a) {
		t.Error("a came back with pod-3 and is reported in use from pod-1's time")
	}
	d.markReportedInUse([]corev1.UniqueVolumeName{a, b})
	if !d.isReportedInUse(a) {
		t.Error("a status that reports a does not mark it")
	}
}
