package scenario

import (
	"strings"
	"testing"
)

func TestParseAPIFaults(t *testing.T) {
	s, err := parseWithFiles(t, `steps:
  - api-conflict: {component: external-provisioner, times: 3}
  - watch-drop: {component: attachdetach-controller, kind: Pod, times: 2}
  - watch-drop: {component: kubelet:node-1, kind: persistentvolumeclaims, times: 1}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Fault{
		{Type: FaultAPIConflict, Component: "external-provisioner", Times: 3},
		{Type: FaultWatchDrop, Component: "attachdetach-controller", Resource: "pods", Times: 2},
		{Type: FaultWatchDrop, Component: "kubelet:node-1", Resource: "persistentvolumeclaims", Times: 1},
	}
	names := []string{"api-conflict external-provisioner", "watch-drop attachdetach-controller pods",
		"watch-drop kubelet:node-1 persistentvolumeclaims"}
	for i, st := range s.Steps {
		if st.Fault == nil || *st.Fault != want[i] {
			t.Errorf("step %d: fault %+v, want %+v", i+1, st.Fault, want[i])
		}
		if st.Name != names[i] {
			t.Errorf("step %d: name %q, want %q", i+1, st.Name, names[i])
		}
	}
}

func TestParseAPIFaultErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"  - api-conflict: {component: external-provisioner}\n",
			"x.yaml:2: step 1 (api-conflict): api-conflict needs component: (its user agent, e.g. external-provisioner) and times:"},
		{"  - api-conflict: {component: external-provisioner, times: 0}\n",
			"x.yaml:2: step 1 (api-conflict): times must be at least 1"},
		{"  - api-conflict: {component: external-provisioner, times: 2, kind: Pod}\n",
			`x.yaml:2: step 1 (api-conflict): unknown field "kind"`},
		{"  - watch-drop: {component: attachdetach-controller, times: 2}\n",
			"x.yaml:2: step 1 (watch-drop): watch-drop needs component: (its user agent, e.g. attachdetach-controller), kind: (e.g. Pod) and times:"},
		{"  - watch-drop: {component: attachdetach-controller, kind: Secret, times: 2}\n",
			`x.yaml:2: step 1 (watch-drop): kind "Secret" is none the components watch: CSIDriver, CSINode`},
		{"  - watch-drop: {component: '', kind: Pod, times: 2}\n", "x.yaml:2: step 1 (watch-drop): component is empty"},
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
