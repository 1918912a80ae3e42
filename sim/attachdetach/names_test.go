package attachdetach

import "testing"

func TestAttachmentNameIsTheRealControllersHash(t *testing.T) {
	// sha256("vol-1" + "hostpath.csisim.io" + "node-1"), computed with
	// sha256sum; a real control plane named the attachment of volume
	// handle vol-89f2db786db550f86b94 on node-1 the same way.
	want := "csi-92f6ac47bbcfa087e8f3f499377ca2610284169f5d337e9da08119cc53569c55"
	if got := AttachmentName("vol-1", "hostpath.csisim.io", "node-1"); got != want {
		t.Errorf("AttachmentName = %s, want %s", got, want)
	}
	if got := UniqueVolumeName("hostpath.csisim.io", "vol-1"); got != "kubernetes.io/csi/hostpath.csisim.io^vol-1" {
		t.Errorf("UniqueVolumeName = %s", got)
	}
}
