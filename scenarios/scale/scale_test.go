package scale

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/util/jsonpath"

	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/scenarios"
)

func TestScenarioParses(t *testing.T) {
	for _, c := range []Config{{Claims: 1, Nodes: 1}, {Claims: 7, Nodes: 3}} {
		out, err := Scenario(c)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := scenarios.Parse("scale.yaml", out, t.TempDir())
		if err != nil {
			t.Fatalf("%+v: %v\n%s", c, err, out)
		}
		if len(sc.Cluster.Nodes) != c.Nodes {
			t.Errorf("%+v: %d nodes", c, len(sc.Cluster.Nodes))
		}
		// driver, objects, the Running wait, N pod and N claim deletes, three waits.
		if want := 2 + 1 + 2*c.Claims + 3; len(sc.Steps) != want {
			t.Errorf("%+v: %d steps, want %d", c, len(sc.Steps), want)
		}
		if got := strings.Count(string(out), "kind: Pod\n"); got != c.Claims {
			t.Errorf("%+v: %d pods", c, got)
		}
		if !strings.Contains(string(out), "nodeName: "+NodeName((c.Claims-1)%c.Nodes)) {
			t.Errorf("%+v: last pod not pinned round-robin", c)
		}
	}
}

func TestScenarioRefusesEmpty(t *testing.T) {
	if _, err := Scenario(Config{Claims: 0, Nodes: 1}); err == nil {
		t.Error("no error for zero claims")
	}
}

// The Running wait's jsonpath names the pods that are not Running, so it
// holds only once every pod is.
func TestRunningFilterNamesPodsNotRunning(t *testing.T) {
	jp := jsonpath.New("x").AllowMissingKeys(true)
	if err := jp.Parse(notRunning); err != nil {
		t.Fatal(err)
	}
	list := map[string]any{"items": []any{
		map[string]any{"metadata": map[string]any{"name": "a"}, "status": map[string]any{"phase": "Running"}},
		map[string]any{"metadata": map[string]any{"name": "b"}, "status": map[string]any{"phase": "Pending"}},
	}}
	var out bytes.Buffer
	if err := jp.Execute(&out, list); err != nil {
		t.Fatal(err)
	}
	if out.String() != "b" {
		t.Errorf("got %q, want b", out.String())
	}
}

// The scenario names the driver through the profile's variables, so that
// csisim run --driver PROFILE runs it with any driver: nothing of csisim's
// own driver is written into it, and the mock profile can run it.
func TestScenarioIsDriverNeutral(t *testing.T) {
	out, err := Scenario(Config{Claims: 2, Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "csisim.io") {
		t.Errorf("the scenario names csisim's own driver:\n%s", out)
	}
	sc, err := scenarios.Parse("scale.yaml", out, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"driver.name", "driver.attachRequired", "driver.parameters"} {
		if !slices.Contains(sc.DriverVars, v) {
			t.Errorf("the scenario does not use ${%s} (it uses %v)", v, sc.DriverVars)
		}
	}
	mock, err := profiles.Get("mock")
	if err != nil {
		t.Fatal(err)
	}
	if why := sc.SkipReason(mock); why != "" {
		t.Errorf("the mock profile cannot run it: %s", why)
	}
}
