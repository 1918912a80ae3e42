package scenarios

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestParseFullScenario(t *testing.T) {
	src := `name: everything
description: Uses every field once.
cluster:
  nodes: [node-1, node-2]
steps:
  - apply:
      file: manifests/driver.yaml
  - name: claim
    apply:
      namespace: team-a
      manifest: |
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: settings}
  - wait:
      object: pvc/data
      namespace: team-a
      jsonPath: '{.status.phase}'
      equals: Bound
      timeout: 30s
      save:
        pv: '{.spec.volumeName}'
        pvcUID: .metadata.uid
  - assert:
      object: pv/${pv}
      jsonPath: '{.metadata.name}'
      equals: pvc-${pvcUID}
  - wait: {object: pods, labelSelector: app=web, count: 2}
  - wait: {object: pod/app, gone: true}
  - delete: {object: pod/app, propagation: foreground, ignoreNotFound: true}
  - sleep: 1500ms
  - wait:
      csiCalls:
        contains: [CreateVolume, DeleteVolume]
        volume: ${pv}
      timeout: 5s
  - assert:
      csiCalls:
        sequence: []
`
	s, err := parseWithFiles(t, src, map[string]string{
		"manifests/driver.yaml": "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: d\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "everything" || s.Description != "Uses every field once." || s.File != "x.yaml" {
		t.Errorf("header = %q %q %q", s.Name, s.Description, s.File)
	}
	if !reflect.DeepEqual(s.Cluster.Nodes, []string{"node-1", "node-2"}) {
		t.Errorf("nodes = %v", s.Cluster.Nodes)
	}
	if len(s.Steps) != 10 {
		t.Fatalf("got %d steps", len(s.Steps))
	}
	wantNames := []string{
		"apply manifests/driver.yaml",
		"claim",
		"wait pvc/data",
		"assert pv/${pv}",
		"wait pods",
		"wait pod/app",
		"delete pod/app",
		"sleep 1.5s",
		"wait csiCalls",
		"assert csiCalls",
	}
	wantActions := []string{"apply", "apply", "wait", "assert", "wait", "wait", "delete", "sleep", "wait", "assert"}
	wantLines := []int{6, 8, 19, 28, 32, 33, 34, 35, 36, 41}
	for i, st := range s.Steps {
		if st.Index != i+1 || st.Name != wantNames[i] || st.Action() != wantActions[i] || st.Line != wantLines[i] {
			t.Errorf("step %d = index %d, name %q, action %q, line %d; want name %q, action %q, line %d",
				i+1, st.Index, st.Name, st.Action(), st.Line, wantNames[i], wantActions[i], wantLines[i])
		}
	}

	apply := s.Steps[1].Apply
	if apply.Namespace != "team-a" || len(apply.Objects) != 2 {
		t.Fatalf("inline apply = %+v", apply)
	}
	if o := apply.Objects[1]; o.File != "x.yaml" || o.Line != 16 || o.Describe() != "ConfigMap/settings" {
		t.Errorf("second inline object = %s at %s:%d, want ConfigMap/settings at x.yaml:16", o.Describe(), o.File, o.Line)
	}
	if o := s.Steps[0].Apply.Objects[0]; !strings.HasSuffix(o.File, filepath.Join("manifests", "driver.yaml")) || o.Line != 1 {
		t.Errorf("file object at %s:%d", o.File, o.Line)
	}

	w := s.Steps[2].Wait
	wantWait := &Wait{
		Check: Check{
			Object:    ObjectRef{Kind: "pvc", Name: "data"},
			Namespace: "team-a",
			JSONPath:  "{.status.phase}",
			Equals:    ptr("Bound"),
			Save:      []SaveVar{{"pv", "{.spec.volumeName}"}, {"pvcUID", ".metadata.uid"}},
		},
		Timeout: 30 * time.Second,
	}
	if !reflect.DeepEqual(w, wantWait) {
		t.Errorf("wait = %+v\nwant %+v", w, wantWait)
	}
	if c := s.Steps[4].Wait; c.LabelSelector != "app=web" || c.Count == nil || *c.Count != 2 || c.Object.Name != "" {
		t.Errorf("list wait = %+v", c)
	}
	if c := s.Steps[5].Wait; !c.Gone || c.Timeout != DefaultWaitTimeout {
		t.Errorf("gone wait = %+v (default timeout %v)", c, DefaultWaitTimeout)
	}
	if d := s.Steps[6].Delete; d.Propagation != "Foreground" || !d.IgnoreNotFound {
		t.Errorf("delete = %+v", d)
	}
	if d := s.Steps[7].Sleep.Duration; d != 1500*time.Millisecond {
		t.Errorf("sleep = %v", d)
	}
	if c := s.Steps[8].Wait; c.Timeout != 5*time.Second || !reflect.DeepEqual(c.CSICalls, &CSICallCheck{Contains: []string{"CreateVolume", "DeleteVolume"}, Volume: "${pv}"}) {
		t.Errorf("csiCalls wait = %+v %+v", c, c.CSICalls)
	}
	if c := s.Steps[9].Assert.CSICalls; c.Sequence == nil || len(c.Sequence) != 0 {
		t.Errorf("empty sequence must be kept as an empty list (no calls), got %#v", c.Sequence)
	}
}

func ptr[T any](v T) *T { return &v }

func TestParseDefaults(t *testing.T) {
	s, err := Parse("dir/my-scenario.yaml", []byte("steps:\n  - sleep: 1s\n"), "dir")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "my-scenario" {
		t.Errorf("name defaults to the file name; got %q", s.Name)
	}
	if len(s.Cluster.Nodes) != 0 {
		t.Errorf("nodes = %v, want none (backend decides)", s.Cluster.Nodes)
	}
}

func TestDefaultStepNameForInlineManifests(t *testing.T) {
	var b strings.Builder
	b.WriteString("steps:\n  - apply:\n      manifest: |\n")
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		b.WriteString("        {apiVersion: v1, kind: ConfigMap, metadata: {name: " + name + "}}\n        ---\n")
	}
	s, err := Parse("x.yaml", []byte(b.String()), ".")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Steps[0].Name, "apply ConfigMap/a, ConfigMap/b, ConfigMap/c, +2 more"; got != want {
		t.Errorf("name = %q, want %q", got, want)
	}
}

func TestParseAcceptsScalarsAsText(t *testing.T) {
	src := `steps:
  - assert: {object: csidriver/d, jsonPath: '{.spec.attachRequired}', equals: true}
  - assert: {object: pvc/d, jsonPath: '{.spec.x}', equals: 3}
  - assert: {object: pvc/d, jsonPath: '{.spec.x}', equals: ""}
`
	s, err := Parse("x.yaml", []byte(src), ".")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"true", "3", ""} {
		if got := *s.Steps[i].Assert.Equals; got != want {
			t.Errorf("step %d equals = %q, want %q", i+1, got, want)
		}
	}
}

func TestParseEscapedVariable(t *testing.T) {
	src := `steps:
  - apply:
      manifest: |
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: a}
        data:
          script: echo $${HOME}
`
	s, err := Parse("x.yaml", []byte(src), ".")
	if err != nil {
		t.Fatal(err)
	}
	st, err := expandStep(s.Steps[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	data := st.Apply.Objects[0].Object["data"].(map[string]any)
	if data["script"] != "echo ${HOME}" {
		t.Errorf("script = %q", data["script"])
	}
}

func TestParseAliases(t *testing.T) {
	src := `x-claim: &claim {object: pvc/data, jsonPath: '{.status.phase}', equals: Bound}
steps:
  - wait: *claim
`
	_, err := Parse("x.yaml", []byte(src), ".")
	if err == nil || !strings.Contains(err.Error(), `unknown field "x-claim"`) {
		t.Fatalf("want unknown top-level field, got %v", err)
	}
	src = `steps:
  - wait: &claim {object: pvc/data, jsonPath: '{.status.phase}', equals: Bound}
  - assert: *claim
`
	s, err := Parse("x.yaml", []byte(src), ".")
	if err != nil {
		t.Fatal(err)
	}
	if s.Steps[1].Assert.Object.Name != "data" {
		t.Errorf("alias not followed: %+v", s.Steps[1].Assert)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte("steps:\n  - apply: {file: m.yaml}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m.yaml"), []byte("{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.File != path || s.Steps[0].Apply.Objects[0].File != filepath.Join(dir, "m.yaml") {
		t.Errorf("files: scenario %q, manifest %q", s.File, s.Steps[0].Apply.Objects[0].File)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// TestLibrary checks that every scenario shipped in library/ loads.
func TestLibrary(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("library", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no scenarios in library/")
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if _, err := Load(path); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestParseClusterZones(t *testing.T) {
	s, err := Parse("z.yaml", []byte("cluster:\n  nodes: [a, b]\n  zones: {a: zone-1}\nsteps:\n  - sleep: 1s\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	if s.Cluster.Zones["a"] != "zone-1" || len(s.Cluster.Zones) != 1 {
		t.Errorf("zones = %v", s.Cluster.Zones)
	}
	for _, tc := range []struct{ src, want string }{
		{"cluster:\n  nodes: [a]\n  zones: {b: zone-1}\nsteps:\n  - sleep: 1s\n", `z.yaml:3: zones names node "b", which is not in nodes`},
		{"cluster:\n  nodes: [a]\n  zones: {a: 'bad zone'}\nsteps:\n  - sleep: 1s\n", `z.yaml:3: invalid zone "bad zone" for node a`},
	} {
		_, err := Parse("z.yaml", []byte(tc.src), ".")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want it to contain %q", err, tc.want)
		}
	}
}

func TestParseClusterSELinux(t *testing.T) {
	s, err := Parse("s.yaml", []byte("cluster:\n  nodes: [a, b]\n  seLinux: [b]\nsteps:\n  - sleep: 1s\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Cluster.SELinux, []string{"b"}) || !slices.Equal(s.Cluster.Request().SELinux, []string{"b"}) {
		t.Errorf("seLinux = %v, request %v", s.Cluster.SELinux, s.Cluster.Request().SELinux)
	}
	for _, tc := range []struct{ name, src, want string }{
		{"not a node", "cluster:\n  nodes: [a]\n  seLinux: [a, c]\nsteps:\n  - sleep: 1s\n", `s.yaml:3: seLinux names node "c", which is not in nodes`},
		{"twice", "cluster:\n  nodes: [a]\n  seLinux:\n    - a\n    - a\nsteps:\n  - sleep: 1s\n", `s.yaml:5: seLinux lists node "a" twice`},
		{"not a list", "cluster:\n  nodes: [a]\n  seLinux: a\nsteps:\n  - sleep: 1s\n", `s.yaml:3: seLinux must be a list`},
		{"without nodes", "cluster:\n  seLinux: [a]\nsteps:\n  - sleep: 1s\n", `s.yaml:2: seLinux needs nodes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.src), ".")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseClusterDriverName(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"cluster:\n  nodes: [a]\n  driverName: ceph.example.com\nsteps:\n  - sleep: 1s\n", "ceph.example.com"},
		{"cluster:\n  driverName: ceph.example.com\nsteps:\n  - sleep: 1s\n", "ceph.example.com"},
		{"cluster:\n  nodes: [a]\nsteps:\n  - sleep: 1s\n", ""},
		{"cluster:\n  nodes: [a]\n  driverName: hostpath.csisim.io\nsteps:\n  - sleep: 1s\n", ""},
	} {
		s, err := Parse("d.yaml", []byte(tc.src), ".")
		if err != nil {
			t.Fatal(err)
		}
		if s.Cluster.DriverName != tc.want {
			t.Errorf("%q: driver name %q, want %q", tc.src, s.Cluster.DriverName, tc.want)
		}
	}
}

func TestParseClusterDeploy(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "manifests-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Parse("x.yaml", []byte("cluster:\n  deploy: manifests-dir\nsteps:\n  - sleep: 1s\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "manifests-dir"); s.Cluster.Deploy != want {
		t.Errorf("Deploy %q, want %q (resolved against the scenario's directory)", s.Cluster.Deploy, want)
	}
}

// noDeployBackend is a backend started without the driver's manifests.
type noDeployBackend struct{}

func (noDeployBackend) RESTConfig() *rest.Config { return nil }

func TestRunnerRefusesDeployElsewhere(t *testing.T) {
	sc := &Scenario{Name: "s", Cluster: Cluster{Deploy: "lib/deploy-x"}, Steps: []Step{{}}}
	_, err := (&Runner{Backend: noDeployBackend{}}).Run(context.Background(), sc)
	if err == nil || !strings.Contains(err.Error(), "its cluster is deployed from lib/deploy-x (cluster.deploy), and this backend was not started with those manifests") {
		t.Errorf("Run: %v", err)
	}
}
