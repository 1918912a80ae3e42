package attacher

import (
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOwnErrorReportsDoNotRequeue(t *testing.T) {
	old := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va", ResourceVersion: "1"}}
	withErr := old.DeepCopy()
	withErr.ResourceVersion = "2"
	withErr.Status.AttachError = &storagev1.VolumeError{Message: "rpc error: code = Internal desc = boom"}
	deleting := withErr.DeepCopy()
	deleting.ResourceVersion = "3"
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	attached := old.DeepCopy()
	attached.ResourceVersion = "2"
	attached.Status.Attached = true
	for _, tc := range []struct {
		name     string
		old, cur *storagev1.VolumeAttachment
		want     bool
	}{
		{"resync (same resourceVersion)", old, old, true},
		{"status.attached changed", old, attached, true},
		{"only attachError changed", old, withErr, false},
		{"attachError stays, deletion starts", withErr, deleting, true},
	} {
		if got := shouldEnqueueVAChange(tc.old, tc.cur); got != tc.want {
			t.Errorf("%s: shouldEnqueueVAChange = %v, want %v", tc.name, got, tc.want)
		}
	}
}
