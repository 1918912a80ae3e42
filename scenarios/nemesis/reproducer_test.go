package nemesis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"
	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/scenarios"
)

const reproducerSource = `# A comment that stays.
name: small
cluster:
  nodes: [node-1]
steps:
  - apply: {file: manifests/hostpath.yaml}
  - wait: {object: pvc/data, jsonPath: '{.status.phase}', equals: Bound}
  - sleep: 10s
  - assert: {object: pvc/data}
`

func TestReproducerWritesFaultsWhereTheyFired(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "manifests/hostpath.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")
	sc, err := scenarios.Parse(dir+"/small.yaml", []byte(reproducerSource), dir)
	if err != nil {
		t.Fatal(err)
	}
	loss := fault.Fault{Kind: fault.NodeLoss, Node: "node-1"}
	csiErr := fault.Fault{Kind: fault.CSIError, CSI: fault.CSI{Method: "NodeStageVolume", Code: codes.Unavailable}, Times: 2}
	ret := fault.Fault{Kind: fault.NodeReturn, Node: "node-1"}
	restart := fault.Fault{Kind: fault.DriverRestart, Plugin: fault.Node, Node: "node-1"}
	fired := []scenarios.FiredFault{
		{TimedFault: scenarios.TimedFault{At: 5 * time.Second, Fault: loss}, Step: 2, Offset: 4 * time.Second},
		{TimedFault: scenarios.TimedFault{At: 7 * time.Second, Fault: csiErr}, Step: 2, Offset: 6 * time.Second},
		{TimedFault: scenarios.TimedFault{At: 20 * time.Second, Fault: ret}, Step: 3, Offset: 3 * time.Second},
		{TimedFault: scenarios.TimedFault{At: 30 * time.Second, Fault: restart}, Step: 4, Offset: 0},
	}
	out := dir + "/out"
	text, err := Reproducer(ReproducerInput{Source: []byte(reproducerSource), Scenario: sc, Fired: fired,
		FromDir: dir, ToDir: out, Name: "small-shrunk", Comment: "# shrunk"})
	if err != nil {
		t.Fatal(err)
	}
	got := string(text)
	for _, want := range []string{
		"# shrunk",
		"# A comment that stays.",
		"name: small-shrunk",
		"apply: {file: ../manifests/hostpath.yaml}",
		"  - sleep: 4s\n  - name: nemesis node-loss on node-1 (fired at +5.0s)\n    nodeLoss: {node: node-1}\n" +
			"  - sleep: 2s\n  - name: nemesis csi-error NodeStageVolume Unavailable times 2 (fired at +7.0s)\n" +
			"    csiError: {method: NodeStageVolume, code: Unavailable, times: 2}\n" +
			"  - wait: {object: pvc/data, jsonPath: '{.status.phase}', equals: Bound, timeout: 54s}\n" +
			"  - sleep: 3s\n  - name: nemesis node-return on node-1 (fired at +20.0s)\n    nodeReturn: {node: node-1}\n  - sleep: 7s\n" +
			"  - name: nemesis driver-restart node on node-1 (fired at +30.0s)\n    driverRestart: {plugin: node, node: node-1, state: keep}\n" +
			"  - assert: {object: pvc/data}\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the reproducer lacks\n%s\nin\n%s", want, got)
		}
	}
	writeFile(t, out, "x", "")
	repro, err := scenarios.Parse(out+"/small-shrunk.yaml", text, out)
	if err != nil {
		t.Fatalf("the reproducer does not load: %v\n%s", err, text)
	}
	if len(repro.Steps) != 11 {
		t.Errorf("the reproducer has %d steps, want 11", len(repro.Steps))
	}
}

func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The API server faults the nemesis fires are written as steps that load
// back into the same faults.
func TestReproducerAPIServerFaultsRoundTrip(t *testing.T) {
	for _, f := range []fault.Fault{
		{Kind: fault.APIServerDown, API: fault.API{Duration: 12300 * time.Millisecond}},
		{Kind: fault.APISlowWrites, API: fault.API{Duration: time.Minute, Latency: 1500 * time.Millisecond}},
		{Kind: fault.APIThrottle, Times: 7, API: fault.API{RetryAfter: 2 * time.Second}},
		{Kind: fault.APIThrottle, Component: "external-attacher", API: fault.API{Duration: 20 * time.Second, RetryAfter: time.Second}},
	} {
		step, err := faultStep(scenarios.FiredFault{TimedFault: scenarios.TimedFault{Fault: f}})
		if err != nil {
			t.Fatal(err)
		}
		doc := mapping("steps", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{step}})
		text, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := scenarios.Parse("x.yaml", text, t.TempDir())
		if err != nil {
			t.Fatalf("%s does not load: %v\n%s", f.Describe(), err, text)
		}
		if got := *sc.Steps[0].Fault; got != f {
			t.Errorf("%s came back as %+v from\n%s", f.Describe(), got, text)
		}
	}
}
