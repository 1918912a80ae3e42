package resizer

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/csisim/csisim/sim/volumeutil"
)

// TestMigratedVolume: the resizer of ebs.csi.aws.com expands an in-tree
// aws-ebs volume whose claim the expand controller handed to it, with the
// translated handle, and writes the capacity into the PV in its in-tree
// form; a claim not handed to it is left alone.
func TestMigratedVolume(t *testing.T) {
	for _, handed := range []bool{true, false} {
		pvc := claim("2Gi")
		if handed {
			pvc.Annotations = map[string]string{volumeutil.AnnResizer: "ebs.csi.aws.com"}
		}
		pv := volume("1Gi", "")
		pv.Spec.CSI = nil
		pv.Spec.AWSElasticBlockStore = &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://us-east-1a/vol-1", FSType: "ext4"}
		s := newSetupFor(t, "ebs.csi.aws.com", pvc, pv, &fakeCSI{})
		if err := s.r.syncClaim(context.Background(), "default/data"); err != nil {
			t.Fatal(err)
		}
		if !handed {
			if len(s.csi.calls) != 0 {
				t.Errorf("a claim not handed to the resizer: %d ControllerExpandVolume calls, want none", len(s.csi.calls))
			}
			continue
		}
		if len(s.csi.calls) != 1 || s.csi.calls[0].GetVolumeId() != "vol-1" {
			t.Fatalf("ControllerExpandVolume calls %v, want one for vol-1 (the translated handle)", s.csi.calls)
		}
		got := s.volume(t)
		if c := got.Spec.Capacity[corev1.ResourceStorage]; c.Cmp(resource.MustParse("2Gi")) != 0 {
			t.Errorf("PV capacity %s, want 2Gi", c.String())
		}
		if got.Spec.CSI != nil || got.Spec.AWSElasticBlockStore == nil {
			t.Errorf("PV source %+v, want the in-tree form kept", got.Spec.PersistentVolumeSource)
		}
	}
}
