package scenario

import (
	"strings"
	"testing"
)

func TestParseStaleVolumeAttachmentAndRestart(t *testing.T) {
	s, err := parseWithFiles(t, `steps:
  - stale-volumeattachment: {node: node-a, claim: data}
  - stale-volumeattachment: {node: node-b, claim: logs, namespace: team-a}
  - controller-manager-restart: {}
  - controller-manager-restart:
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Fault{
		{Type: FaultStaleVolumeAttachment, Node: "node-a", Claim: "data"},
		{Type: FaultStaleVolumeAttachment, Node: "node-b", Claim: "logs", Namespace: "team-a"},
		{Type: FaultControllerManagerRestart},
		{Type: FaultControllerManagerRestart},
	}
	names := []string{"stale-volumeattachment data on node-a", "stale-volumeattachment logs on node-b",
		"controller-manager-restart", "controller-manager-restart"}
	for i, st := range s.Steps {
		if st.Fault == nil || *st.Fault != want[i] {
			t.Errorf("step %d: fault %+v, want %+v", i+1, st.Fault, want[i])
		}
		if st.Name != names[i] {
			t.Errorf("step %d: name %q, want %q", i+1, st.Name, names[i])
		}
	}
}

func TestParseStaleVolumeAttachmentErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"  - stale-volumeattachment: {node: node-a}\n",
			"x.yaml:2: step 1 (stale-volumeattachment): stale-volumeattachment needs node: (the node's name) and claim: (the claim whose volume it attaches)"},
		{"  - stale-volumeattachment: {node: node-a, clam: data}\n",
			`x.yaml:2: step 1 (stale-volumeattachment): unknown field "clam" (did you mean "claim"?)`},
		{"  - stale-volumeattachment: {node: '', claim: data}\n", "x.yaml:2: step 1 (stale-volumeattachment):"},
		{"  - sleep: 1s\n  - controller-manager-restart: {node: node-a}\n",
			"x.yaml:3: step 2 (controller-manager-restart): controller-manager-restart takes no fields; write controller-manager-restart: {}"},
	}
	for _, tc := range tests {
		_, err := parseWithFiles(t, "steps:\n"+tc.src, nil)
		if err == nil {
			t.Errorf("%q: parsed without error", tc.src)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error\n%v\nwant it to contain\n%s", tc.src, err, tc.want)
		}
	}
}
