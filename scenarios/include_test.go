package scenarios

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestInclude(t *testing.T) {
	shared := map[string]string{
		"shared/driver.yaml": "# shared steps\n- apply: {file: class.yaml}\n- wait: {object: sc/fast, save: {sc: '{.metadata.name}'}}\n",
		"shared/class.yaml":  "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: ${driver.name}\n",
	}
	s, err := parseWithFiles(t, "steps:\n  - include: shared/driver.yaml\n  - assert: {object: 'sc/${sc}'}\nfinally:\n  - include: shared/driver.yaml\n", shared)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Steps) != 3 || len(s.Finally) != 2 {
		t.Fatalf("%d steps and %d finally, want 3 and 2", len(s.Steps), len(s.Finally))
	}
	first := s.Steps[0]
	if filepath.Base(first.File) != "driver.yaml" || first.Line != 2 || first.Index != 1 || s.Steps[2].Index != 3 {
		t.Errorf("first included step at %s:%d (index %d); the scenario's own step is index %d", first.File, first.Line, first.Index, s.Steps[2].Index)
	}
	if s.Finally[0].Index != 4 || !s.Finally[0].Finally {
		t.Errorf("finally step %+v, want index 4 marked Finally", s.Finally[0])
	}
	if got := s.Steps[0].Apply.Objects[0].File; filepath.Base(got) != "class.yaml" || !strings.Contains(got, "shared") {
		t.Errorf("manifest file %q, want shared/class.yaml: files are relative to the including file", got)
	}
	if strings.Join(s.DriverVars, ",") != "driver.name" {
		t.Errorf("driver variables %v, want the included manifest's driver.name", s.DriverVars)
	}
}

func TestIncludeErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // the error starts with want[0] and contains the rest
	}{
		{"error in the included file", map[string]string{"inc.yaml": "- sleep: 1s\n- wiat: {object: pvc/x}\n"},
			[]string{"inc.yaml:2: step 2: unknown field \"wiat\"", `did you mean "wait"`}},
		{"missing file", nil, []string{"x.yaml:2: cannot read included file"}},
		{"includes itself", map[string]string{"inc.yaml": "- include: inc.yaml\n"}, []string{"inc.yaml:1: include inc.yaml: the file includes itself"}},
		{"not a list", map[string]string{"inc.yaml": "sleep: 1s\n"}, []string{"inc.yaml:1: an included file must be a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseWithFiles(t, "steps:\n  - include: inc.yaml\n", tt.files)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			// Included files are named by their path.
			if i := strings.LastIndex(msg[:strings.Index(msg, ":")+1], "/"); i >= 0 {
				msg = msg[i+1:]
			}
			if !strings.HasPrefix(msg, tt.want[0]) {
				t.Errorf("error\n%s\nwant it to start with %q", err, tt.want[0])
			}
			for _, w := range tt.want[1:] {
				if !strings.Contains(msg, w) {
					t.Errorf("error\n%s\nwant %q", err, w)
				}
			}
		})
	}
}
