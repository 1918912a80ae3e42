package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parseWithFiles parses src as "x.yaml" in a directory that also holds files.
func parseWithFiles(t *testing.T, src string, files map[string]string) (*Scenario, error) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Parse("x.yaml", []byte(src), dir)
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		files map[string]string
		// want are substrings of one reported error; the first is its
		// "file:line:" prefix, which the error must start with.
		want []string
		// wantCount, if set, is how many errors must be reported.
		wantCount int
	}{
		{
			name: "cluster.deploy names a path that is not there",
			src: `cluster:
  deploy: no-such-dir
steps:
  - sleep: 1s
`,
			want: []string{"x.yaml:2:", `deploy "no-such-dir": no such file or directory next to the scenario`},
		},
		{
			name: "unknown field with suggestion",
			src: `steps:
  - wait:
      object: pvc/data
      jsonPath: '{.status.phase}'
      equal: Bound
`,
			want: []string{"x.yaml:5:", `step 1 (wait): unknown field "equal" (did you mean "equals"?)`},
		},
		{
			name: "unknown field without suggestion lists the known ones",
			src: `steps:
  - delete: {object: pod/a, grace: 3}
`,
			want: []string{"x.yaml:2:", `step 1 (delete): unknown field "grace"; delete takes object, namespace, propagation, ignoreNotFound`},
		},
		{
			name: "two actions in one step",
			src: `steps:
  - sleep: 1s
  - apply:
      manifest: |
        {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
    wait: {object: pvc/a}
`,
			want: []string{"x.yaml:6:", "step 2: a step needs exactly one of apply, wait, consistently, assert, delete, patch, sleep, nodeLoss, nodeReturn, outOfService, missingMountPropagation, kubeletRestart, staleVolumeAttachment, controllerManagerRestart, csiError, csiDelay, csiHang, csiLostAnswer, csiHeal, driverCrash, driverCrashMidCall, driverRestart, nodePluginMissing, nodeVolumeLimit, volumeHealth, sidecarRestart, mountBusy, apiConflict, watchDrop, apiServerDown, apiSlowWrites, apiThrottle; found apply and wait"},
		},
		{
			name: "no action in a step",
			src: `steps:
  - name: nothing
`,
			want: []string{"x.yaml:2:", "step 1: a step needs exactly one of apply, wait, consistently, assert, delete, patch, sleep, nodeLoss, nodeReturn, outOfService, missingMountPropagation, kubeletRestart, staleVolumeAttachment, controllerManagerRestart, csiError, csiDelay, csiHang, csiLostAnswer, csiHeal, driverCrash, driverCrashMidCall, driverRestart, nodePluginMissing, nodeVolumeLimit, volumeHealth, sidecarRestart, mountBusy, apiConflict, watchDrop, apiServerDown, apiSlowWrites, apiThrottle; found none"},
		},
		{
			name: "kubelet-restart without a node",
			src: `steps:
  - sleep: 1s
  - kubeletRestart: {nod: node-1}
`,
			want: []string{"x.yaml:3:", `step 2 (kubeletRestart): unknown field "nod" (did you mean "node"?)`},
		},
		{
			name: "kubelet-restart with an empty node",
			src: `steps:
  - kubeletRestart: {node: ""}
`,
			want: []string{"x.yaml:2:", "step 1 (kubeletRestart):"},
		},
		{
			name: "nodeVolumeLimit without a limit",
			src: `steps:
  - nodeVolumeLimit: {node: node-1}
`,
			want: []string{"x.yaml:2:", "step 1 (nodeVolumeLimit): nodeVolumeLimit needs limit"},
		},
		{
			name: "volumeHealth without a status",
			src: `steps:
  - volumeHealth: {claim: data}
`,
			want: []string{"x.yaml:2:", "step 1 (volumeHealth): volumeHealth needs status"},
		},
		{
			name: "volumeHealth with an unknown status",
			src: `steps:
  - volumeHealth: {claim: data, status: Sick, reason: Flu}
`,
			want: []string{"x.yaml:2:", `volumeHealth: status "Sick" is none of DEGRADED, INACCESSIBLE, DATA_LOSS, Healthy`},
		},
		{
			name: "mountBusy without for",
			src: `steps:
  - mountBusy: {pod: app, volume: data}
`,
			want: []string{"x.yaml:2:", "step 1 (mountBusy): mountBusy needs for"},
		},
		{
			name: "mountBusy for too long",
			src: `steps:
  - mountBusy: {pod: app, volume: data, for: 2h}
`,
			want: []string{"x.yaml:2:", "for must be at most 1h0m0s, not 2h0m0s"},
		},
		{
			name: "mountBusy with an unknown field",
			src: `steps:
  - mountBusy: {pod: app, volume: data, for: 10s, node: node-1}
`,
			want: []string{"x.yaml:2:", "node"},
		},
		{
			name: "volumeHealth adverse without a reason",
			src: `steps:
  - volumeHealth: {claim: data, status: DEGRADED}
`,
			want: []string{"x.yaml:2:", "volumeHealth: status DEGRADED needs a reason"},
		},
		{
			name: "volumeHealth Healthy with a reason",
			src: `steps:
  - volumeHealth: {claim: data, status: Healthy, reason: Fine}
`,
			want: []string{"x.yaml:2:", "volumeHealth: status Healthy takes no reason or message"},
		},
		{
			name: "nodeVolumeLimit with a negative limit",
			src: `steps:
  - nodeVolumeLimit: {node: node-1, limit: -1}
`,
			want: []string{"x.yaml:2:", "step 1 (nodeVolumeLimit): limit must be a whole number, 0 or more, not"},
		},
		{
			name: "misspelt action is reported once, as unknown",
			src: `steps:
  - wiat: {object: pvc/a}
`,
			want:      []string{"x.yaml:2:", `step 1: unknown field "wiat" (did you mean "wait"?)`},
			wantCount: 1,
		},
		{
			name: "step is not a mapping",
			src: `steps:
  - sleep
`,
			want: []string{"x.yaml:2:", `step 1: a step must be a mapping (key: value), not "sleep"`},
		},
		{
			name: "timeout without unit",
			src: `steps:
  - wait:
      object: pvc/a
      timeout: 30
`,
			want: []string{"x.yaml:4:", `step 1 (wait): invalid timeout "30": time: missing unit in duration`, "add a unit, e.g. 30s"},
		},
		{
			name: "timeout zero",
			src: `steps:
  - wait: {object: pvc/a, timeout: 0s}
`,
			want: []string{"x.yaml:2:", "timeout must be positive"},
		},
		{
			name: "timeout on assert",
			src: `steps:
  - assert:
      object: pvc/a
      timeout: 3s
`,
			want: []string{"x.yaml:4:", `step 1 (assert): unknown field "timeout"`},
		},
		{
			name: "sleep without unit",
			src: `steps:
  - sleep: 2
`,
			want: []string{"x.yaml:2:", `step 1 (sleep): invalid sleep "2"`, "e.g. 2s"},
		},
		{
			name: "undefined variable",
			src: `steps:
  - wait: {object: pvc/data}
  - assert:
      object: pv/${pv}
`,
			want: []string{"x.yaml:4:", "step 2 (assert): undefined variable ${pv}", "no variables are set yet"},
		},
		{
			name: "variable used in the step that saves it",
			src: `steps:
  - wait:
      object: pv/${pv}
      save: {pv: '{.metadata.name}'}
`,
			want: []string{"x.yaml:3:", "step 1 (wait): undefined variable ${pv}"},
		},
		{
			name: "misspelt variable",
			src: `steps:
  - wait:
      object: pvc/data
      save: {pvName: '{.spec.volumeName}'}
  - assert: {object: 'pv/${pvname}'}
`,
			want: []string{"x.yaml:5:", `step 2 (assert): undefined variable ${pvname} (did you mean "pvName"?); set so far: pvName`},
		},
		{
			name: "unterminated variable",
			src: `steps:
  - wait: {object: pvc/data, save: {a: '{.metadata.uid}'}}
  - assert:
      object: pvc/data
      jsonPath: '{.metadata.uid}'
      equals: ${a
`,
			want: []string{"x.yaml:6:", "step 2 (assert): unterminated ${"},
		},
		{
			name: "variable inside an unquoted flow mapping",
			src: `steps:
  - wait: {object: pvc/data, save: {pv: '{.spec.volumeName}'}}
  - wait: {object: pv/${pv}, gone: true}
`,
			want: []string{"x.yaml:3:", "invalid YAML", "quote values that use variables"},
		},
		{
			name: "variable in a manifest file path",
			src: `steps:
  - wait: {object: pvc/data, save: {f: '{.metadata.name}'}}
  - apply: {file: '${f}.yaml'}
`,
			want: []string{"x.yaml:3:", "step 2 (apply): file \"${f}.yaml\" uses a variable"},
		},
		{
			name: "equals without jsonpath",
			src: `steps:
  - wait:
      object: pvc/data
      equals: Bound
`,
			want: []string{"x.yaml:4:", "step 1 (wait): equals needs jsonPath"},
		},
		{
			name: "startsWith without jsonpath",
			src: `steps:
  - wait:
      object: pvc/data
      startsWith: Bo
`,
			want: []string{"x.yaml:4:", "step 1 (wait): startsWith needs jsonPath"},
		},
		{
			name: "startsWith with equals",
			src: `steps:
  - assert:
      object: pvc/data
      jsonPath: '{.status.phase}'
      equals: Bound
      startsWith: Bo
`,
			want: []string{"x.yaml:6:", "equals and startsWith can't be combined"},
		},
		{
			name: "equals left empty",
			src: `steps:
  - assert:
      object: pvc/data
      jsonPath: '{.status.phase}'
      equals:
`,
			want: []string{"x.yaml:5:", `equals is empty; write equals: "" if an empty value is meant`},
		},
		{
			name: "gone with jsonpath",
			src: `steps:
  - wait:
      object: pod/app
      gone: true
      jsonPath: '{.status.phase}'
`,
			want: []string{"x.yaml:5:", "gone: true can't be combined with jsonPath"},
		},
		{
			name: "gone is not a boolean",
			src: `steps:
  - wait: {object: pod/app, gone: yes}
`,
			want: []string{"x.yaml:2:", `gone must be true or false, not "yes"`},
		},
		{
			name: "gone on a kind",
			src: `steps:
  - wait: {object: persistentvolumes, gone: true}
`,
			want: []string{"x.yaml:2:", "gone needs an object name", "count: 0"},
		},
		{
			name: "kind without name needs count or jsonpath",
			src: `steps:
  - wait:
      object: persistentvolumes
`,
			want: []string{"x.yaml:3:", `"persistentvolumes" names a kind, not an object`},
		},
		{
			name: "count on a named object",
			src: `steps:
  - wait: {object: pv/a, count: 1}
`,
			want: []string{"x.yaml:2:", "count applies to a kind without a name"},
		},
		{
			name: "count negative",
			src: `steps:
  - wait: {object: pvs, count: -1}
`,
			want: []string{"x.yaml:2:", `count must be a whole number, 0 or more, not "-1"`},
		},
		{
			name: "invalid label selector",
			src: `steps:
  - wait: {object: pods, count: 1, labelSelector: 'app in (a'}
`,
			want: []string{"x.yaml:2:", "invalid labelSelector"},
		},
		{
			name: "invalid jsonpath",
			src: `steps:
  - wait:
      object: pvc/a
      jsonPath: '{.status.phase'
`,
			want: []string{"x.yaml:4:", `invalid jsonPath "{.status.phase"`},
		},
		{
			name: "invalid save name",
			src: `steps:
  - wait:
      object: pvc/a
      save:
        my-var: '{.metadata.uid}'
`,
			want: []string{"x.yaml:5:", `invalid variable name "my-var"`},
		},
		{
			name: "object with empty name",
			src: `steps:
  - wait: {object: pvc/}
`,
			want: []string{"x.yaml:2:", `object "pvc/" has an empty name`},
		},
		{
			name: "object with namespace in it",
			src: `steps:
  - wait: {object: pvc/default/data}
`,
			want: []string{"x.yaml:2:", "more than one '/'", "namespace:"},
		},
		{
			name: "check without object",
			src: `steps:
  - wait: {jsonPath: '{.a}', timeout: 3s}
`,
			want: []string{"x.yaml:2:", "step 1 (wait): wait needs object:"},
		},
		{
			name: "duplicate key",
			src: `steps:
  - wait:
      object: pvc/a
      object: pvc/b
`,
			want: []string{"x.yaml:4:", "object is set twice in wait (first at line 3)"},
		},
		{
			name: "object and csiCalls together",
			src: `steps:
  - assert:
      object: pvc/a
      csiCalls: {sequence: [CreateVolume]}
`,
			want: []string{"x.yaml:4:", "object and csiCalls can't be combined"},
		},
		{
			name: "csiCalls with an object field",
			src: `steps:
  - assert:
      namespace: default
      csiCalls: {sequence: [CreateVolume]}
`,
			want: []string{"x.yaml:3:", "namespace applies to object:, not to csiCalls:"},
		},
		{
			name: "unknown CSI method",
			src: `steps:
  - assert:
      csiCalls:
        sequence:
          - CreateVolume
          - NodeStageVolumes
`,
			want: []string{"x.yaml:6:", `unknown CSI method "NodeStageVolumes" (did you mean "NodeStageVolume"?)`},
		},
		{
			name: "volume health polling is informational",
			src: `steps:
  - assert:
      csiCalls:
        contains: [ControllerListVolumeHealth]
`,
			want: []string{"x.yaml:4:", "ControllerListVolumeHealth is informational and left out of the comparison"},
		},
		{
			name: "informational CSI method",
			src: `steps:
  - assert:
      csiCalls: {contains: [Probe, CreateVolume]}
`,
			want: []string{"x.yaml:3:", "Probe is informational"},
		},
		{
			name: "csiCalls with sequence and contains",
			src: `steps:
  - assert:
      csiCalls:
        sequence: [CreateVolume]
        contains: [CreateVolume]
`,
			want: []string{"x.yaml:5:", "sequence (exact) or contains"},
		},
		{
			name: "csiCalls with neither",
			src: `steps:
  - assert:
      csiCalls: {volume: v1}
`,
			want: []string{"x.yaml:3:", "csiCalls needs sequence:"},
		},
		{
			name: "csiCalls contains empty",
			src: `steps:
  - assert:
      csiCalls: {contains: []}
`,
			want: []string{"x.yaml:3:", "contains is empty"},
		},
		{
			name: "apply with file and manifest",
			src: `steps:
  - apply:
      file: a.yaml
      manifest: |
        {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
`,
			files: map[string]string{"a.yaml": "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}"},
			want:  []string{"x.yaml:4:", "apply takes file or manifest, not both"},
		},
		{
			name: "apply with neither file nor manifest",
			src: `steps:
  - apply: {namespace: x}
`,
			want: []string{"x.yaml:2:", "apply needs file:"},
		},
		{
			name: "manifest file missing",
			src: `steps:
  - apply: {file: nope.yaml}
`,
			want: []string{"x.yaml:2:", "step 1 (apply): cannot read manifest file", "nope.yaml"},
		},
		{
			name: "inline manifest with a YAML error in its second document",
			src: `steps:
  - apply:
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: a}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: b
         data: {}
`,
			want: []string{"x.yaml:12:", "step 1 (apply): document 2: invalid YAML"},
		},
		{
			name: "inline manifest without kind",
			src: `steps:
  - apply:
      manifest: |
        # a comment first
        apiVersion: v1
        metadata: {name: a}
`,
			want: []string{"x.yaml:5:", "step 1 (apply): document 1: kind is missing"},
		},
		{
			name: "inline manifest with an undefined variable",
			src: `steps:
  - apply:
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: a}
        data:
          script: echo ${HOME}
`,
			want: []string{"x.yaml:8:", "undefined variable ${HOME}"},
		},
		{
			name: "manifest file without kind in its second document",
			src: `steps:
  - apply: {file: manifests/m.yaml}
`,
			files: map[string]string{"manifests/m.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
# second
apiVersion: v1
metadata: {name: b}
`},
			want: []string{"m.yaml:6:", "step 1 (apply): document 2: kind is missing"},
		},
		{
			name: "manifest file with a YAML error",
			src: `steps:
  - apply: {file: m.yaml}
`,
			files: map[string]string{"m.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n labels: {}\n"},
			want:  []string{"m.yaml:5:", "invalid YAML"},
		},
		{
			name: "manifest given as a mapping",
			src: `steps:
  - apply:
      manifest:
        apiVersion: v1
`,
			want: []string{"x.yaml:4:", "manifest must be YAML text", "manifest: |"},
		},
		{
			name: "folded manifest",
			src: `steps:
  - apply:
      manifest: >
        apiVersion: v1
`,
			want: []string{"x.yaml:3:", "literal block"},
		},
		{
			name: "manifest with only comments",
			src: `steps:
  - apply:
      manifest: |
        # nothing yet
`,
			want: []string{"x.yaml:4:", "manifest holds no objects"},
		},
		{
			name: "manifest with generateName",
			src: `steps:
  - apply:
      manifest: |
        apiVersion: v1
        kind: Pod
        metadata: {generateName: app-}
`,
			want: []string{"x.yaml:4:", "generateName is not supported"},
		},
		{
			name: "manifest that is a List",
			src: `steps:
  - apply:
      manifest: |
        apiVersion: v1
        kind: List
        items: []
`,
			want: []string{"x.yaml:4:", "kind List is not supported"},
		},
		{
			name: "manifest that is a scalar",
			src: `steps:
  - apply:
      manifest: |
        just text
`,
			want: []string{"x.yaml:4:", "document 1: not an object"},
		},
		{
			name: "delete without name",
			src: `steps:
  - delete: {object: pods}
`,
			want: []string{"x.yaml:2:", "delete needs kind/name"},
		},
		{
			name: "delete with unknown propagation",
			src: `steps:
  - delete: {object: pod/a, propagation: cascade}
`,
			want: []string{"x.yaml:2:", "propagation must be one of Foreground, Background, Orphan"},
		},
		{
			name: "missing steps",
			src:  "name: x\ndescription: y\n",
			want: []string{"x.yaml:1:", "steps: is missing"},
		},
		{
			name: "empty steps",
			src:  "steps: []\n",
			want: []string{"x.yaml:1:", "steps is empty"},
		},
		{
			name: "steps not a list",
			src:  "steps:\n  wait: {object: pvc/a}\n",
			want: []string{"x.yaml:2:", "steps must be a list"},
		},
		{
			name: "unknown top-level field",
			src:  "name: x\nstep:\n  - sleep: 1s\n",
			want: []string{"x.yaml:2:", `unknown field "step" (did you mean "steps"?)`},
		},
		{
			name: "invalid node name",
			src:  "cluster:\n  nodes: [node-1, Node_2]\nsteps: [{sleep: 1s}]\n",
			want: []string{"x.yaml:2:", `invalid node name "Node_2"`},
		},
		{
			name: "duplicate node",
			src:  "cluster:\n  nodes:\n    - a\n    - a\nsteps: [{sleep: 1s}]\n",
			want: []string{"x.yaml:4:", `node "a" is listed twice`},
		},
		{
			name: "nodes not a list",
			src:  "cluster: {nodes: node-1}\nsteps: [{sleep: 1s}]\n",
			want: []string{"x.yaml:1:", "nodes must be a list"},
		},
		{
			name: "mis-indented key in a step",
			src: `name: x
steps:
  - wait:
      object: pvc/a
      timeout: 3s
     equals: 3
`,
			want: []string{"x.yaml:6:", "invalid YAML: did not find expected key", "starts at line 3"},
		},
		{
			name: "tab in indentation",
			src:  "steps:\n  - wait:\n\t  object: pvc/a\n",
			want: []string{"x.yaml:3:", "invalid YAML"},
		},
		{
			name: "second document",
			src:  "steps: [{sleep: 1s}]\n---\nsteps: [{sleep: 1s}]\n",
			want: []string{"x.yaml:2:", "one YAML document"},
		},
		{
			name: "empty file",
			src:  "# nothing\n",
			want: []string{"x.yaml:1:", "file is empty"},
		},
		{
			name: "scenario is a list",
			src:  "- sleep: 1s\n",
			want: []string{"x.yaml:1:", "a scenario must be a mapping"},
		},
		{
			name: "every broken step is reported",
			src: `steps:
  - wait: {object: pvc/a, timeout: 3}
  - sleep: 1s
  - delete: {object: pods}
`,
			want:      []string{"x.yaml:4:", "step 3 (delete)"},
			wantCount: 2,
		},
		{
			name: "a broken save does not cause false undefined-variable errors",
			src: `steps:
  - wait: {object: pvc/a, save: {pv: '{.spec.volumeName'}}
  - assert: {object: 'pv/${pv}'}
`,
			want:      []string{"x.yaml:2:", "invalid save pv"},
			wantCount: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseWithFiles(t, tt.src, tt.files)
			if err == nil {
				t.Fatalf("parsed without error: %+v", s)
			}
			var perrs ParseErrors
			if !errors.As(err, &perrs) {
				t.Fatalf("error is %T, want ParseErrors: %v", err, err)
			}
			if tt.wantCount > 0 && len(perrs) != tt.wantCount {
				t.Errorf("got %d errors, want %d:\n%v", len(perrs), tt.wantCount, err)
			}
			for _, pe := range perrs {
				msg := pe.Error()
				if !strings.HasPrefix(msg, tt.want[0]) && !strings.Contains(msg, "/"+tt.want[0]) {
					continue
				}
				for _, w := range tt.want[1:] {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q does not contain %q", msg, w)
					}
				}
				return
			}
			t.Errorf("no error at %s; got:\n%v", tt.want[0], err)
		})
	}
}

func TestParseErrorsUnwrap(t *testing.T) {
	_, err := Parse("x.yaml", []byte("steps:\n  - sleep: 2\n"), ".")
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("errors.As(*ParseError) failed on %v", err)
	}
	want := ParseError{File: "x.yaml", Line: 2, Step: 1, Action: "sleep"}
	if pe.File != want.File || pe.Line != want.Line || pe.Step != want.Step || pe.Action != want.Action {
		t.Errorf("got %+v, want %+v", *pe, want)
	}
}
