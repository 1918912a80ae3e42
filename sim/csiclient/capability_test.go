package csiclient

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
)

func TestCapabilityAccessModes(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	tests := []struct {
		name        string
		modes       []corev1.PersistentVolumeAccessMode
		multiWriter bool
		want        csi.VolumeCapability_AccessMode_Mode
		wantErr     bool
	}{
		{"RWO, driver without SINGLE_NODE_MULTI_WRITER", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, false, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, false},
		{"RWO, driver with SINGLE_NODE_MULTI_WRITER", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, true, csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER, false},
		{"RWOP without", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, false, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, false},
		{"RWOP with", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, true, csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, false},
		{"ROX", []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany}, true, csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, false},
		{"RWX wins", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteMany}, false, csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, false},
		{"ROX with RWO is not CSI", []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany, corev1.ReadWriteOnce}, false, 0, true},
		{"no modes", nil, false, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Capability(tt.modes, nil, "ext4", nil, tt.multiWriter)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %v, want an error", c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.GetAccessMode().GetMode(); got != tt.want {
				t.Errorf("mode %v, want %v", got, tt.want)
			}
			if c.GetMount().GetFsType() != "ext4" {
				t.Errorf("mount %v", c.GetMount())
			}
		})
	}
	c, err := Capability([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, &block, "ext4", nil, false)
	if err != nil || c.GetBlock() == nil || c.GetMount() != nil {
		t.Errorf("block capability %v, %v", c, err)
	}
}
