package attachdetach

import "testing"

func TestAttachmentNameIsTheRealControllersHash(t *testing.T) {
	// sha256("pvc-1" + "hostpath.csisim.io" + "node-1"), computed with sha256sum.
	want := "csi-39b287bfd76ccfe0709fc526239c3af7e83bcf1d80e6803806bd6fb036727273"
	if got := AttachmentName("pvc-1", "hostpath.csisim.io", "node-1"); got != want {
		t.Errorf("AttachmentName = %s, want %s", got, want)
	}
	if got := UniqueVolumeName("hostpath.csisim.io", "vol-1"); got != "kubernetes.io/csi/hostpath.csisim.io^vol-1" {
		t.Errorf("UniqueVolumeName = %s", got)
	}
}
