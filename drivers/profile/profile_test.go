package profile

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestShippedProfilesLoad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "profiles", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped profiles found: %v", err)
	}
	for _, f := range files {
		p, err := Load(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if p.Vars()["name"] != p.Name {
			t.Errorf("%s: ${driver.name} = %q, want %q", f, p.Vars()["name"], p.Name)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"no name", "start: {layout: split, mock: true}", "name: required"},
		{"bad layout", "name: x\nstart: {layout: both}", `start.layout: "both"`},
		{"split without node", "name: x\nstart: {layout: split, controller: {path: /bin/d}}", "needs controller and node"},
		{"combined with node", "name: x\nstart: {layout: combined, command: {path: /bin/d}, node: {path: /bin/d}}", "only for layout split"},
		{"unknown capability", "name: x\nstart: {layout: split, mock: true}\ncapabilities: {snapshot: true}", "capabilities.snapshot: unknown capability"},
		{"unknown key", "name: x\nstart: {layout: split, mock: true}\ncapabilites: {}", "unknown field"},
		{"topology without keys", "name: x\nstart: {layout: split, mock: true}\ncapabilities: {topology: true}", "topologyKeys: required"},
		{"built without build", "name: x\nstart: {layout: combined, command: {path: '{built}'}}", "start.build does not say what to build"},
		{"zones without flag", "name: x\nstart: {layout: split, mock: true}\ncapabilities: {zones: true}", "flags.zone: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestMissing(t *testing.T) {
	p := &Profile{Capabilities: map[Capability]bool{Attach: true, Block: false}}
	got := p.Missing([]Capability{Attach, Block, Snapshots})
	if len(got) != 2 || got[0] != Block || got[1] != Snapshots {
		t.Fatalf("Missing = %v, want [block snapshots]", got)
	}
}
