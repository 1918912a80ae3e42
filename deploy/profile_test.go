package deploy

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/scenarios"
)

// TestDeployedProfileMatchesTheManifests: the flags DeployedProfile takes
// out are flags the deployed driver containers really lack. If the
// deployment gains one, the profile must give the capability back.
func TestDeployedProfileMatchesTheManifests(t *testing.T) {
	def := profiles.MustDefault()
	dropped := [][]string{def.Flags.Capacity, def.Flags.VolumeLimit, def.Flags.MultiNode}
	for _, args := range def.Flags.Extra {
		dropped = append(dropped, args)
	}
	for what, spec := range podSpecs(t, load(t, basePattern)) {
		c := container(spec, "csisim-plugin")
		if c == nil {
			t.Fatalf("%s: no csisim-plugin container", what)
		}
		for _, flags := range dropped {
			for _, f := range flags {
				name, _, _ := strings.Cut(f, "=")
				if !strings.HasPrefix(name, "--") {
					continue // a value, not a flag
				}
				for _, a := range c.Args {
					if a == name || strings.HasPrefix(a, name+"=") {
						t.Errorf("%s runs the driver with %s, which DeployedProfile says it lacks", what, a)
					}
				}
			}
		}
	}
}

// TestDeployedProfileSkips: a scenario that asks for the driver to be
// started otherwise is skipped, naming what it asks; one that does not
// runs.
func TestDeployedProfileSkips(t *testing.T) {
	p := DeployedProfile()
	for _, tt := range []struct {
		scenario, skip string
	}{
		{"basic-lifecycle", ""},
		{"readwritemany-unsupported", ""},
		{"readwritemany-two-nodes", "multiNode"},
		{"scheduling-volume-limits", "volumeLimit"},
		{"storage-capacity", "capacity"},
		{"provisioning-secrets-and-clones", "no access to Secrets"},
	} {
		s, err := scenarios.Load(filepath.Join("..", "scenarios", "library", tt.scenario+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		got := s.SkipReason(p)
		switch {
		case tt.skip == "" && got != "":
			t.Errorf("%s: skipped (%s), want it run", tt.scenario, got)
		case tt.skip != "" && !strings.Contains(got, tt.skip):
			t.Errorf("%s: skip reason %q, want one naming %s", tt.scenario, got, tt.skip)
		case tt.skip != "" && !strings.Contains(got, DeployedProfileName):
			t.Errorf("%s: skip reason %q does not name %s", tt.scenario, got, DeployedProfileName)
		}
	}
	if def := profiles.MustDefault(); !def.Has("multiNode") || len(def.Flags.MultiNode) == 0 {
		t.Error("DeployedProfile changed the default profile")
	}
}
