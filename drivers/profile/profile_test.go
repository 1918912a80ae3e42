package profile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csisim/csisim/drivers/driverinfo"
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
		{"unknown key", "name: x\nstart: {layout: split, mock: true}\ncapabilites: {}", "line 3: capabilites: unknown key (docs/profiles/README.md lists every key)"},
		{"two fsGroupPolicies", "name: x\nstart: {layout: split, mock: true}\nfsGroupPolicy: File\ncsiDriver: {fsGroupPolicy: None}", "say it once, in csiDriver"},
		{"bad fsGroupPolicy", "name: x\nstart: {layout: split, mock: true}\ncsiDriver: {fsGroupPolicy: file}", `csiDriver.fsGroupPolicy "file"`},
		{"bad lifecycle mode", "name: x\nstart: {layout: split, mock: true}\ncsiDriver: {volumeLifecycleModes: [Inline]}", `"Inline": want Persistent or Ephemeral`},
		{"podInfo both ways", "name: x\nstart: {layout: split, mock: true}\ncapabilities: {podInfo: false}\ncsiDriver: {podInfoOnMount: true}", "capabilities.podInfo false and csiDriver.podInfoOnMount true"},
		{"token without audience", "name: x\nstart: {layout: split, mock: true}\ncsiDriver: {tokenRequests: [{expirationSeconds: 600}]}", "tokenRequests[0].audience: required"},
		{"sanity skip not a regexp", "name: x\nstart: {layout: split, mock: true}\nsanity: {skip: {'NodeStage(': known bug}}", `sanity.skip "NodeStage("`},
		{"sanity skip without reason", "name: x\nstart: {layout: split, mock: true}\nsanity: {skip: {'NodeStage': ''}}", "say why"},
		{"unknown csiDriver field", "name: x\nstart: {layout: split, mock: true}\ncsiDriver:\n  podInfoOnMount: true\n  attachRequierd: false", "line 5: csiDriver.attachRequierd: unknown key"},
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

// reported is what a driver with controller publish and no stage, no
// snapshots, no topology says of itself.
var reported = driverinfo.Info{Name: "nfs.example.com",
	Capabilities: driverinfo.Capabilities{
		Plugin:     map[csi.PluginCapability_Service_Type]bool{csi.PluginCapability_Service_CONTROLLER_SERVICE: true},
		Controller: map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME: true, csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME: true},
		Node:       map[csi.NodeServiceCapability_RPC_Type]bool{},
	},
	NodeInfo: &driverinfo.NodeInfo{ID: "node-1"}}

func TestMissing(t *testing.T) {
	p := &Profile{Name: "x", Capabilities: map[Capability]bool{Attach: true, Block: false}}
	// Before the driver is asked, what it may report is not missing.
	got := p.Missing([]Capability{Attach, Block, Snapshots, RealMounts})
	if strings.Join(capNames(got), " ") != "block realMounts" {
		t.Fatalf("Missing before asking = %v, want [block realMounts]", got)
	}
	// Once asked, the driver's answer decides.
	got = p.Complete(reported).Missing([]Capability{Attach, Block, Snapshots, StageUnstage})
	if strings.Join(capNames(got), " ") != "block snapshots stageUnstage" {
		t.Fatalf("Missing once asked = %v, want [block snapshots stageUnstage]", got)
	}
	if why := p.Complete(reported).Unreported(StageUnstage); why != "STAGE_UNSTAGE_VOLUME (NodeGetCapabilities)" {
		t.Fatalf("Unreported(stageUnstage) = %q", why)
	}
	if why := p.Complete(reported).Unreported(Block); why != "" {
		t.Fatalf("Unreported(block) = %q: the profile, not the driver, says block", why)
	}
}

// TestGroupSnapshots: asked of the group controller; a driver without the
// service (the mocks) lacks it, and says which of the two it did not
// report.
func TestGroupSnapshots(t *testing.T) {
	p := &Profile{Name: "x"}
	if got := p.Complete(reported).Missing([]Capability{GroupSnapshots}); len(got) != 1 {
		t.Fatalf("Missing without a group controller = %v", got)
	}
	if why := p.Complete(reported).Unreported(GroupSnapshots); why != "GROUP_CONTROLLER_SERVICE (GetPluginCapabilities)" {
		t.Fatalf("Unreported(groupSnapshots) = %q", why)
	}
	with := reported
	with.Plugin = map[csi.PluginCapability_Service_Type]bool{csi.PluginCapability_Service_CONTROLLER_SERVICE: true, csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE: true}
	with.Group = map[csi.GroupControllerServiceCapability_RPC_Type]bool{}
	if why := p.Complete(with).Unreported(GroupSnapshots); why != "CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT (GroupControllerGetCapabilities)" {
		t.Fatalf("Unreported(groupSnapshots) with the service = %q", why)
	}
	with.Group = map[csi.GroupControllerServiceCapability_RPC_Type]bool{csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT: true}
	if !p.Complete(with).Has(GroupSnapshots) {
		t.Fatal("a driver that reports CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT lacks groupSnapshots")
	}
}

// TestNodeExpansion: the node's EXPAND_VOLUME decides, once asked, unless
// the profile says its class's volumes never grow on the node.
func TestNodeExpansion(t *testing.T) {
	expanding := reported
	expanding.Node = map[csi.NodeServiceCapability_RPC_Type]bool{csi.NodeServiceCapability_RPC_EXPAND_VOLUME: true}
	undeclared := &Profile{Name: "x"}
	declaredFalse := &Profile{Name: "x", Capabilities: map[Capability]bool{NodeExpansion: false}}
	for _, tt := range []struct {
		name             string
		p                *Profile
		has, known       bool
		unreported, want string
	}{
		{"not asked, not declared", undeclared, false, false, "", ""},
		{"asked: no node EXPAND_VOLUME", undeclared.Complete(reported), false, true, "EXPAND_VOLUME (NodeGetCapabilities)", "nodeExpansion"},
		{"asked: node EXPAND_VOLUME", undeclared.Complete(expanding), true, true, "", ""},
		{"declared false", declaredFalse, false, true, "", "nodeExpansion"},
		{"declared false, node EXPAND_VOLUME", declaredFalse.Complete(expanding), false, true, "", "nodeExpansion"},
	} {
		has, known := tt.p.Known(NodeExpansion)
		missing := strings.Join(capNames(tt.p.Missing([]Capability{NodeExpansion})), " ")
		if has != tt.has || known != tt.known || tt.p.Unreported(NodeExpansion) != tt.unreported || missing != tt.want {
			t.Errorf("%s: Known = %v, %v; Unreported %q; Missing %q; want %v, %v; %q; %q", tt.name, has, known,
				tt.p.Unreported(NodeExpansion), missing, tt.has, tt.known, tt.unreported, tt.want)
		}
	}
	// Declared false is no contradiction of a node that grows other
	// volumes.
	if got := declaredFalse.Contradictions(expanding); len(got) > 0 {
		t.Errorf("Contradictions of nodeExpansion false: %q", got)
	}
}

func capNames(cs []Capability) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c))
	}
	return out
}

func TestContradictions(t *testing.T) {
	p, err := Parse([]byte(`name: nfs.example.com
start: {layout: split, mock: true}
capabilities: {attach: false, stageUnstage: true, topology: true, block: true, expansionOnline: true, nodeExpansion: true, fsGroup: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"capabilities.attach: the profile says false, but nfs.example.com reports PUBLISH_UNPUBLISH_VOLUME (ControllerGetCapabilities): leave the key out, the driver is asked",
		"capabilities.nodeExpansion: the profile says true, but nfs.example.com does not report EXPAND_VOLUME (NodeGetCapabilities)",
		"capabilities.topology: the profile says true, but nfs.example.com does not report VOLUME_ACCESSIBILITY_CONSTRAINTS (GetPluginCapabilities)",
		"capabilities.stageUnstage: the profile says true, but nfs.example.com does not report STAGE_UNSTAGE_VOLUME (NodeGetCapabilities)",
		"capabilities.expansionOnline: the profile says true, but nfs.example.com does not report EXPAND_VOLUME (ControllerGetCapabilities or NodeGetCapabilities)",
		"capabilities.fsGroup: the profile says true, but nfs.example.com does not report VOLUME_MOUNT_GROUP (NodeGetCapabilities) and csiDriver.fsGroupPolicy is ReadWriteOnceWithFSType, not File",
	}
	if got := p.Contradictions(reported); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Contradictions =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Block cannot be asked: no word about it. A profile that declares
	// nothing the driver can answer contradicts nothing.
	if got := (&Profile{Name: "x", Capabilities: map[Capability]bool{Block: true, RealMounts: true}}).Contradictions(reported); len(got) > 0 {
		t.Fatalf("Contradictions of undeclared capabilities: %q", got)
	}
}

func TestCSIDriverFields(t *testing.T) {
	p, err := Parse([]byte(`name: nfs.example.com
start: {layout: split, mock: true}
csiDriver:
  podInfoOnMount: true
  fsGroupPolicy: File
  volumeLifecycleModes: [Persistent, Ephemeral]
  tokenRequests: [{audience: vault, expirationSeconds: 600}]
  requiresRepublish: true
  seLinuxMount: true
`))
	if err != nil {
		t.Fatal(err)
	}
	// attachRequired: Kubernetes' default before the driver is asked, then
	// the driver's answer.
	if !p.AttachRequired() {
		t.Error("attachRequired before asking: want true, Kubernetes' default")
	}
	noAttach := reported
	noAttach.Controller = map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME: true}
	asked := p.Complete(noAttach)
	drv, _ := asked.Objects("", StorageClassName)
	s := drv.Spec
	if *s.AttachRequired || !*s.PodInfoOnMount || string(*s.FSGroupPolicy) != "File" || len(s.VolumeLifecycleModes) != 2 ||
		len(s.TokenRequests) != 1 || s.TokenRequests[0].Audience != "vault" || !*s.RequiresRepublish || !*s.SELinuxMount {
		t.Fatalf("CSIDriver spec %+v", s)
	}
	if !asked.Has(PodInfo) || !asked.Has(Ephemeral) || !asked.Has(FSGroup) || asked.Vars()["attachRequired"] != "false" {
		t.Fatalf("podInfo %v, ephemeral %v, fsGroup %v, attachRequired %s", asked.Has(PodInfo), asked.Has(Ephemeral), asked.Has(FSGroup), asked.Vars()["attachRequired"])
	}
	// A declared attachRequired wins over the driver's answer.
	yes := true
	p.CSIDriver.AttachRequired = &yes
	if !p.Complete(noAttach).AttachRequired() {
		t.Error("csiDriver.attachRequired true: want true")
	}
}

// A profile written before csisim asked the driver still loads: the keys
// it can now ask are optional, and the CSIDriver fields in their old
// places mean what csiDriver says.
func TestOldProfileLoads(t *testing.T) {
	p, err := Parse([]byte(`name: old.example.com
start: {layout: combined, command: {path: /bin/d}}
capabilities: {attach: true, stageUnstage: true, topology: true, podInfo: true, ephemeral: true, fsGroup: true}
fsGroupPolicy: File
`))
	if err != nil {
		t.Fatal(err)
	}
	drv, _ := p.Objects("", StorageClassName)
	if !*drv.Spec.AttachRequired || !*drv.Spec.PodInfoOnMount || string(*drv.Spec.FSGroupPolicy) != "File" || len(drv.Spec.VolumeLifecycleModes) != 2 {
		t.Fatalf("CSIDriver spec %+v", drv.Spec)
	}
}

func TestOwnDriverArgs(t *testing.T) {
	own := func(extraController, extraNode []string) *Profile {
		return &Profile{Name: "x.csisim.io", Start: Start{Layout: Split,
			Controller: &Command{Path: "{csisim}", Args: append([]string{"driver", "--endpoint", "{endpoint}", "--root", "{root}", "--mode", "controller", "--driver-name", "{driverName}"}, extraController...)},
			Node:       &Command{Path: "{csisim}", Args: append([]string{"driver", "--endpoint", "{endpoint}", "--node-id", "{nodeID}", "--mode", "node"}, extraNode...)}}}
	}
	for _, tc := range []struct {
		name    string
		p       *Profile
		want    []string
		wantErr string
	}{
		{"csisim's driver as it is", own(nil, nil), nil, ""},
		{"with flags", own([]string{"--no-attach", "--no-stage"}, []string{"--no-attach", "--no-stage"}), []string{"--no-attach", "--no-stage"}, ""},
		{"flags that differ", own([]string{"--no-attach"}, nil), nil, "must be the same"},
		{"another binary", &Profile{Name: "nfs", Start: Start{Layout: Split, Controller: &Command{Path: "/bin/nfs"}, Node: &Command{Path: "/bin/nfs"}}}, nil, "not csisim's own driver"},
		{"the mock", &Profile{Name: "mock", Start: Start{Mock: true}}, nil, "does not run csisim's own driver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.p.OwnDriverArgs()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestLoadResolvesPathsBesideTheProfile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	src := "name: x\nstart:\n  layout: split\n  controller: {path: helpers/run}\n  node: {path: plugin}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "helpers", "run"); p.Start.Controller.Path != want {
		t.Errorf("a path with a slash: %q, want %q, the profile directory's", p.Start.Controller.Path, want)
	}
	if p.Start.Node.Path != "plugin" {
		t.Errorf("a name without a slash: %q, want it left to PATH", p.Start.Node.Path)
	}
	for _, path := range []string{"{csisim}", "/usr/bin/plugin"} {
		src := "name: x\nstart:\n  layout: combined\n  command: {path: '" + path + "'}\n"
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Load(file)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if p.Start.Command.Path != path {
			t.Errorf("%s: path %q, want it kept", path, p.Start.Command.Path)
		}
	}
}

// A driver started beside the first gets a class of its own that is not
// the default: the first driver's stays the only one.
func TestExtraObjectsClassIsNotDefault(t *testing.T) {
	p := &Profile{Name: "csisim-file"}
	_, first := p.Objects("hostpath.csisim.io", StorageClassName)
	drv, extra := p.ExtraObjects("shares.csisim.io")
	if first.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" {
		t.Errorf("the first driver's class %s is not the default", first.Name)
	}
	if extra.Name != "shares.csisim.io" || extra.Provisioner != "shares.csisim.io" || drv.Name != "shares.csisim.io" {
		t.Errorf("extra objects: CSIDriver %s, StorageClass %s provisioned by %s; want all shares.csisim.io", drv.Name, extra.Name, extra.Provisioner)
	}
	if v, ok := extra.Annotations["storageclass.kubernetes.io/is-default-class"]; ok {
		t.Errorf("the extra driver's class is marked default (%q)", v)
	}
}
