package scenarios

import (
	"strings"
	"testing"
)

func TestLowerCamel(t *testing.T) {
	for in, want := range map[string]string{
		"node-loss": "nodeLoss", "ignore_not_found": "ignoreNotFound", "csi-error": "csiError",
		"jsonPath": "jsonPath", "controller-manager-restart": "controllerManagerRestart",
	} {
		if got := lowerCamel(in); got != want {
			t.Errorf("lowerCamel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOldKeysNameTheirNewCasing(t *testing.T) {
	tests := []struct{ step, want string }{
		{"node-loss: {node: a}", "key node-loss is now nodeLoss"},
		{"stale-volumeattachment: {node: a, claim: c}", "key stale-volumeattachment is now staleVolumeAttachment"},
		{"wait: {object: pvc/x, jsonpath: '{.a}'}", "key jsonpath is now jsonPath"},
		{"delete: {object: pvc/x, ignore_not_found: true}", "key ignore_not_found is now ignoreNotFound"},
		{"wait: {object: pvc, label_selector: a=b, count: 1}", "key label_selector is now labelSelector"},
		{"assert: {csi_calls: {contains: [CreateVolume]}}", "key csi_calls is now csiCalls"},
	}
	for _, tt := range tests {
		_, err := Parse("x.yaml", []byte("cluster: {nodes: [a]}\nsteps:\n  - "+tt.step+"\n"), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "x.yaml:3:") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want x.yaml:3: ... %s", tt.step, err, tt.want)
		}
	}
}
