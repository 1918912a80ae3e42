package fakekube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
)

func TestValidateClaimStatusUpdate(t *testing.T) {
	base := func() *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}
	}
	tests := []struct {
		name   string
		change func(*corev1.PersistentVolumeClaim)
		want   string // the first error, "" for none
	}{
		{"a resize in progress", func(c *corev1.PersistentVolumeClaim) {
			c.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("2Gi")}
			c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending}
		}, ""},
		{"a negative capacity", func(c *corev1.PersistentVolumeClaim) {
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("-1Gi")}
		}, `status.capacity[storage]: Invalid value: "-1Gi": must be greater than or equal to 0`},
		{"a native resource other than storage", func(c *corev1.PersistentVolumeClaim) {
			c.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("1")}
		}, `status.allocatedResources: Unsupported value: "cpu": supported values: "storage"`},
		{"a prefixed resource", func(c *corev1.PersistentVolumeClaim) {
			c.Status.AllocatedResources = corev1.ResourceList{"example.com/iops": apiresource.MustParse("100")}
		}, ""},
		{"an unknown resize status", func(c *corev1.PersistentVolumeClaim) {
			c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: "Resizing"}
		}, `status.allocatedResourceStatuses: Unsupported value: "storage": supported values: "ControllerResizeInProgress", "ControllerResizeInfeasible", "NodeResizeInProgress", "NodeResizeInfeasible", "NodeResizePending"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.change(c)
			errs := validateClaimStatusUpdate(c)
			got := ""
			if len(errs) > 0 {
				got = errs[0].Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidateClaimUpdateVolumeMode(t *testing.T) {
	block, fs := corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem
	was := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: &fs}}
	now := was.DeepCopy()
	now.Spec.VolumeMode = &block
	errs := validateClaimUpdate(now, was)
	// The spec error, and the real server's own one for volumeMode.
	if len(errs) != 2 || errs[1].Error() != `volumeMode: Invalid value: "Block": field is immutable` {
		t.Errorf("errors %v", errs)
	}
}
