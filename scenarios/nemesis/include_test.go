package nemesis

import (
	"strings"
	"testing"

	"github.com/csisim/csisim/scenarios"
)

func TestReproducerInlinesIncludedSteps(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "manifests/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")
	writeFile(t, dir, "steps/setup.yaml", "- apply: {file: ../manifests/ns.yaml}\n- sleep: 1s\n")
	src := "name: inc\nsteps:\n  - include: steps/setup.yaml\n  - sleep: 2s\n"
	sc, err := scenarios.Parse(dir+"/inc.yaml", []byte(src), dir)
	if err != nil {
		t.Fatal(err)
	}
	text, err := Reproducer(ReproducerInput{Source: []byte(src), Scenario: sc, FromDir: dir, ToDir: dir + "/out", Name: "inc-shrunk", Comment: "# shrunk"})
	if err != nil {
		t.Fatal(err)
	}
	got := string(text)
	for _, want := range []string{"  - apply: {file: ../manifests/ns.yaml}\n  - sleep: 1s\n  - sleep: 2s\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the reproducer lacks\n%s\nin\n%s", want, got)
		}
	}
	if strings.Contains(got, "include") {
		t.Errorf("the reproducer still includes:\n%s", got)
	}
}
