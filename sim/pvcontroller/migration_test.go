package pvcontroller

import (
	"maps"
	"testing"
)

// TestMigrationAnnotations: migrated-to follows the in-tree provisioner a
// claim was handed to (storage-provisioner, the beta one as fallback) or a
// volume was provisioned by, is removed when that provisioner has no
// migration, and a volume made by hand gets none.
func TestMigrationAnnotations(t *testing.T) {
	const to = "pv.kubernetes.io/migrated-to"
	for _, tc := range []struct {
		name  string
		claim bool
		ann   map[string]string
		want  map[string]string
	}{
		{"claim of the in-tree plugin", true, map[string]string{"volume.kubernetes.io/storage-provisioner": "kubernetes.io/aws-ebs"},
			map[string]string{"volume.kubernetes.io/storage-provisioner": "kubernetes.io/aws-ebs", to: "ebs.csi.aws.com"}},
		{"claim with only the beta annotation", true, map[string]string{"volume.beta.kubernetes.io/storage-provisioner": "kubernetes.io/gce-pd"},
			map[string]string{"volume.beta.kubernetes.io/storage-provisioner": "kubernetes.io/gce-pd", to: "pd.csi.storage.gke.io"}},
		{"claim handed to the CSI driver", true, map[string]string{"volume.kubernetes.io/storage-provisioner": "ebs.csi.aws.com"}, nil},
		{"claim of a plugin without migration", true, map[string]string{"volume.kubernetes.io/storage-provisioner": "kubernetes.io/rbd", to: "x"},
			map[string]string{"volume.kubernetes.io/storage-provisioner": "kubernetes.io/rbd"}},
		{"volume the in-tree plugin provisioned", false, map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/aws-ebs"},
			map[string]string{"pv.kubernetes.io/provisioned-by": "kubernetes.io/aws-ebs", to: "ebs.csi.aws.com"}},
		{"volume made by hand", false, map[string]string{"volume.kubernetes.io/storage-provisioner": "kubernetes.io/aws-ebs"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ann := maps.Clone(tc.ann)
			changed := migrationAnnotations(ann, tc.claim)
			if tc.want == nil {
				if changed || !maps.Equal(ann, tc.ann) {
					t.Errorf("changed to %v", ann)
				}
				return
			}
			if !changed || !maps.Equal(ann, tc.want) {
				t.Errorf("got %v (changed %v), want %v", ann, changed, tc.want)
			}
		})
	}
}
