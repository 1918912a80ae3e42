package kind_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// The runc wrapper takes CAP_SYS_RESOURCE out of what runc is asked to
// grant: from a bundle's config.json on create and run, from the process
// spec of exec (docker exec --privileged, which kind runs on its nodes),
// and leaves every other call's files alone.
func TestRuncWrapperDropsSysResource(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed (the wrapper needs it; apt-get install jq)")
	}
	caps := map[string][]string{"bounding": {"CAP_CHOWN", "CAP_SYS_RESOURCE"}, "effective": {"CAP_SYS_RESOURCE"}}
	for _, tc := range []struct {
		name  string
		args  func(dir string) []string
		file  string // relative to dir
		field func(spec map[string]any) any
		drops bool
	}{
		{"create", func(dir string) []string { return []string{"--root", "/r", "create", "--bundle", dir, "c1"} }, "config.json",
			func(s map[string]any) any { return s["process"].(map[string]any)["capabilities"] }, true},
		{"run with -b=", func(dir string) []string { return []string{"run", "-b=" + dir, "c1"} }, "config.json",
			func(s map[string]any) any { return s["process"].(map[string]any)["capabilities"] }, true},
		{"exec", func(dir string) []string {
			return []string{"--root", "/r", "exec", "--process", filepath.Join(dir, "process.json"), "--detach", "c1"}
		}, "process.json", func(s map[string]any) any { return s["capabilities"] }, true},
		{"start leaves the bundle alone", func(dir string) []string { return []string{"start", "--bundle", dir, "c1"} }, "config.json",
			func(s map[string]any) any { return s["process"].(map[string]any)["capabilities"] }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			spec := map[string]any{"capabilities": caps}
			if tc.file == "config.json" {
				spec = map[string]any{"process": map[string]any{"capabilities": caps}}
			}
			raw, _ := json.Marshal(spec)
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", "runc-no-sys-resource.sh")
			cmd.Args = append(cmd.Args, tc.args(dir)...)
			cmd.Env = append(os.Environ(), "CSISIM_RUNC=true")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("wrapper: %v\n%s", err, out)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			for set, list := range tc.field(got).(map[string]any) {
				has := slices.Contains(list.([]any), any("CAP_SYS_RESOURCE"))
				if has == tc.drops {
					t.Errorf("%s: CAP_SYS_RESOURCE there: %v, want %v (%v)", set, has, !tc.drops, list)
				}
			}
			if !slices.Contains(tc.field(got).(map[string]any)["bounding"].([]any), any("CAP_CHOWN")) {
				t.Errorf("CAP_CHOWN lost: %v", got)
			}
		})
	}
}
