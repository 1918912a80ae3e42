package scenarios

import (
	"strings"
	"testing"

	"github.com/csisim/csisim/trace"
)

// csiLog builds CSI entries from "Method" or "Method@volume" strings.
func csiLog(calls ...string) []trace.Entry {
	out := make([]trace.Entry, len(calls))
	for i, c := range calls {
		method, vol, _ := strings.Cut(c, "@")
		out[i] = trace.Entry{Kind: trace.CSI, Actor: "driver", Verb: method, Object: vol}
	}
	return out
}

var lifecycle = []string{
	"CreateVolume", "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume",
	"NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume", "DeleteVolume",
}

func TestCSICallCheck(t *testing.T) {
	full := csiLog("GetPluginInfo", "Probe", "CreateVolume@v1", "ControllerGetCapabilities",
		"ControllerPublishVolume@v1", "NodeGetInfo", "NodeStageVolume@v1", "NodePublishVolume@v1",
		"NodeGetVolumeStats@v1", "NodeUnpublishVolume@v1", "NodeUnstageVolume@v1",
		"ControllerUnpublishVolume@v1", "GetCapacity", "DeleteVolume@v1", "ListVolumes")
	twoVolumes := csiLog("CreateVolume@v1", "CreateVolume@v2", "DeleteVolume@v2", "DeleteVolume@v1")
	// Two volumes staged and published, v1 with the SELinux option.
	const seLinuxFlag = `context="system_u:object_r:container_file_t:s0:c1,c2"`
	withFlags := csiLog("NodeStageVolume@v1", "NodePublishVolume@v1", "NodeStageVolume@v2", "NodePublishVolume@v2", "NodeUnpublishVolume@v1")
	for i := range withFlags {
		withFlags[i].Call = &trace.CSICall{Volume: withFlags[i].Object}
		if i < 2 {
			withFlags[i].Call.MountFlags = []string{"noatime", seLinuxFlag}
		}
	}

	tests := []struct {
		name        string
		check       CSICallCheck
		calls       []trace.Entry
		wantHeld    bool
		wantSeen    string
		wantExplain []string
	}{
		{name: "exact sequence, informational calls ignored", check: CSICallCheck{Sequence: lifecycle}, calls: full, wantHeld: true},
		{name: "full gRPC method names", check: CSICallCheck{Sequence: []string{"CreateVolume"}}, calls: csiLog("/csi.v1.Controller/CreateVolume"), wantHeld: true, wantSeen: "CreateVolume"},
		{
			name:        "skipped call",
			check:       CSICallCheck{Sequence: []string{"CreateVolume", "NodeStageVolume", "NodePublishVolume"}},
			calls:       csiLog("CreateVolume", "NodePublishVolume"),
			wantSeen:    "CreateVolume, NodePublishVolume",
			wantExplain: []string{"first difference at call 2", ">> 2  NodeStageVolume    NodePublishVolume", "3  NodePublishVolume  -"},
		},
		{
			name:        "reordered calls",
			check:       CSICallCheck{Sequence: []string{"NodeStageVolume", "NodePublishVolume"}},
			calls:       csiLog("NodePublishVolume@v", "NodeStageVolume@v"),
			wantSeen:    "NodePublishVolume, NodeStageVolume",
			wantExplain: []string{"first difference at call 1", ">> 1  NodeStageVolume    NodePublishVolume v"},
		},
		{
			name:        "extra call at the end",
			check:       CSICallCheck{Sequence: []string{"CreateVolume"}},
			calls:       csiLog("CreateVolume", "DeleteVolume"),
			wantSeen:    "CreateVolume, DeleteVolume",
			wantExplain: []string{"1 unexpected call(s) after the expected sequence", ">> 2  -             DeleteVolume"},
		},
		{
			name:        "missing calls at the end",
			check:       CSICallCheck{Sequence: []string{"CreateVolume", "DeleteVolume"}},
			calls:       csiLog("CreateVolume"),
			wantSeen:    "CreateVolume",
			wantExplain: []string{"missing 1 call(s) at the end of the sequence"},
		},
		{
			name:        "failed call is shown",
			check:       CSICallCheck{Sequence: []string{"CreateVolume"}},
			calls:       []trace.Entry{{Verb: "CreateVolume", Err: "rpc error: code = Internal"}, {Verb: "CreateVolume", Object: "v1"}},
			wantSeen:    "CreateVolume, CreateVolume",
			wantExplain: []string{"CreateVolume (failed: rpc error: code = Internal)"},
		},
		{
			name:     "a sidecar's immediate repeat of a successful controller call counts once",
			check:    CSICallCheck{Sequence: []string{"ControllerPublishVolume", "NodeStageVolume"}},
			calls:    csiLog("ControllerPublishVolume@v", "ControllerPublishVolume@v", "NodeStageVolume@v"),
			wantHeld: true, wantSeen: "ControllerPublishVolume, NodeStageVolume",
		},
		{
			name:        "repeated node calls all count",
			check:       CSICallCheck{Sequence: []string{"NodePublishVolume"}},
			calls:       csiLog("NodePublishVolume@v", "NodePublishVolume@v"),
			wantSeen:    "NodePublishVolume, NodePublishVolume",
			wantExplain: []string{"1 unexpected call(s)"},
		},
		{
			name:        "the same controller call on two volumes counts twice",
			check:       CSICallCheck{Sequence: []string{"DeleteVolume"}},
			calls:       csiLog("DeleteVolume@v1", "DeleteVolume@v2"),
			wantSeen:    "DeleteVolume, DeleteVolume",
			wantExplain: []string{"1 unexpected call(s)"},
		},
		{
			name:     "a contains check is not collapsed",
			check:    CSICallCheck{Contains: []string{"ControllerPublishVolume", "ControllerPublishVolume"}},
			calls:    csiLog("ControllerPublishVolume@v", "ControllerPublishVolume@v"),
			wantHeld: true, wantSeen: "ControllerPublishVolume, ControllerPublishVolume",
		},
		{name: "empty sequence, no calls", check: CSICallCheck{Sequence: []string{}}, calls: csiLog("Probe"), wantHeld: true, wantSeen: "no calls"},
		{name: "empty sequence, some calls", check: CSICallCheck{Sequence: []string{}}, calls: csiLog("CreateVolume"), wantSeen: "CreateVolume", wantExplain: []string{"1 unexpected call(s)"}},
		{name: "volume filter", check: CSICallCheck{Sequence: []string{"CreateVolume", "DeleteVolume"}, Volume: "v2"}, calls: twoVolumes, wantHeld: true, wantSeen: "CreateVolume, DeleteVolume"},
		{name: "mount flag filter", check: CSICallCheck{Sequence: []string{"NodeStageVolume", "NodePublishVolume"}, MountFlag: seLinuxFlag},
			calls: withFlags, wantHeld: true, wantSeen: "NodeStageVolume, NodePublishVolume"},
		{name: "mount flag filter, on a volume without it", check: CSICallCheck{Sequence: []string{}, MountFlag: seLinuxFlag, Volume: "v2"},
			calls: withFlags, wantHeld: true, wantSeen: "no calls"},
		{name: "mount flag filter, another flag", check: CSICallCheck{Sequence: []string{}, MountFlag: `context="other"`},
			calls: withFlags, wantHeld: true, wantSeen: "no calls"},
		{name: "contains in order", check: CSICallCheck{Contains: []string{"CreateVolume", "NodePublishVolume", "DeleteVolume"}}, calls: full, wantHeld: true},
		{
			name:        "contains out of order",
			check:       CSICallCheck{Contains: []string{"CreateVolume", "DeleteVolume", "NodeStageVolume"}},
			calls:       csiLog("CreateVolume", "NodeStageVolume", "DeleteVolume"),
			wantSeen:    "CreateVolume, NodeStageVolume, DeleteVolume",
			wantExplain: []string{"NodeStageVolume not seen after DeleteVolume", "1  CreateVolume", "3  DeleteVolume"},
		},
		{
			name:        "contains, nothing matched",
			check:       CSICallCheck{Contains: []string{"NodeExpandVolume", "DeleteVolume"}},
			calls:       nil,
			wantSeen:    "no calls",
			wantExplain: []string{"NodeExpandVolume not seen (nor the calls expected after it: DeleteVolume)", "none"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.check.evaluate(tt.calls)
			if v.held != tt.wantHeld {
				t.Errorf("held = %v, want %v (seen %s)\n%s", v.held, tt.wantHeld, v.seen, v.explain)
			}
			if tt.wantSeen != "" && v.seen != tt.wantSeen {
				t.Errorf("seen = %q, want %q", v.seen, tt.wantSeen)
			}
			for _, w := range tt.wantExplain {
				if !strings.Contains(v.explain, w) {
					t.Errorf("explanation does not contain %q:\n%s", w, v.explain)
				}
			}
			if v.held && v.explain != "" {
				t.Errorf("a check that holds needs no explanation, got:\n%s", v.explain)
			}
		})
	}
}

func TestCSICallExpectation(t *testing.T) {
	tests := []struct {
		check CSICallCheck
		want  string
	}{
		{CSICallCheck{Sequence: []string{"CreateVolume", "DeleteVolume"}}, "CSI calls to be exactly: CreateVolume, DeleteVolume"},
		{CSICallCheck{Sequence: []string{}}, "no CSI calls"},
		{CSICallCheck{Contains: []string{"DeleteVolume"}, Volume: "v1"}, "CSI calls on volume v1 to include, in order: DeleteVolume"},
		{CSICallCheck{Sequence: []string{}, MountFlag: "ro"}, "no CSI calls with mount flag ro"},
	}
	for _, tt := range tests {
		if got := tt.check.expectation(); got != tt.want {
			t.Errorf("expectation = %q, want %q", got, tt.want)
		}
	}
}

func TestCSIMethodLists(t *testing.T) {
	for _, m := range informationalCSICalls {
		if !isCSIMethod(m) {
			t.Errorf("informational call %s is not in csiMethods", m)
		}
	}
	for _, m := range lifecycle {
		if !isCSIMethod(m) || IsInformationalCSICall(m) {
			t.Errorf("%s must be a comparable CSI method", m)
		}
	}
}
