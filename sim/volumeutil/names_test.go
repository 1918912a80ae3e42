package volumeutil

import "testing"

func TestAttacherFinalizer(t *testing.T) {
	for driver, want := range map[string]string{
		"hostpath.csisim.io":  "external-attacher/hostpath-csisim-io",
		"ebs.csi.aws.com":     "external-attacher/ebs-csi-aws-com",
		"my_driver/v2":        "external-attacher/my-driver-v2",
		"already-safe-Name-9": "external-attacher/already-safe-Name-9",
		"trailing.":           "external-attacher/trailing-X",
	} {
		if got := AttacherFinalizer(driver); got != want {
			t.Errorf("AttacherFinalizer(%q) = %q, want %q", driver, got, want)
		}
	}
}
