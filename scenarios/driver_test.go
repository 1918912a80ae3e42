package scenarios

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/fault"
)

func shippedProfile(t *testing.T, name string) *profile.Profile {
	t.Helper()
	p, err := profiles.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mockAnswers is what csisim's mock driver says of itself.
var mockAnswers = driverinfo.Info{Name: "hostpath.csisim.io", Capabilities: driverinfo.Capabilities{
	Plugin: map[csi.PluginCapability_Service_Type]bool{csi.PluginCapability_Service_CONTROLLER_SERVICE: true},
	Controller: map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME: true,
		csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME: true},
	Node: map[csi.NodeServiceCapability_RPC_Type]bool{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME: true},
}, NodeInfo: &driverinfo.NodeInfo{ID: "node-1"}}

// nodeExpandingAnswers is what a driver whose node grows volumes says of
// itself: the mock's answers and node EXPAND_VOLUME.
var nodeExpandingAnswers = driverinfo.Info{Name: "hostpath.csisim.io", Capabilities: driverinfo.Capabilities{
	Plugin:     mockAnswers.Plugin,
	Controller: mockAnswers.Controller,
	Node: map[csi.NodeServiceCapability_RPC_Type]bool{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME: true,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME: true},
}, NodeInfo: &driverinfo.NodeInfo{ID: "node-1"}}

func TestSkipReason(t *testing.T) {
	tests := []struct {
		name, src, profile, want string
	}{
		{"no needs", "steps:\n  - sleep: 1s\n", "mock", ""},
		{"need met", "needs: [attach]\nsteps:\n  - sleep: 1s\n", "mock", ""},
		{"need the driver is still to be asked for", "needs: [snapshots]\nsteps:\n  - sleep: 1s\n", "mock", ""},
		{"need missing", "needs: [snapshots]\nsteps:\n  - sleep: 1s\n", "mock asked", "needs snapshots: hostpath.csisim.io does not report CREATE_DELETE_SNAPSHOT (ControllerGetCapabilities)"},
		{"two missing", "needs: [snapshots, block]\nsteps:\n  - sleep: 1s\n", "mock asked",
			"needs snapshots and block: hostpath.csisim.io does not report CREATE_DELETE_SNAPSHOT (ControllerGetCapabilities); driver profile mock lacks block"},
		{"two the profile lacks", "needs: [realMounts, block]\nsteps:\n  - sleep: 1s\n", "mock asked", "needs realMounts and block: driver profile mock lacks them"},
		{"zones alone label the nodes", "cluster: {nodes: [a], zones: {a: z1}}\nsteps:\n  - sleep: 1s\n", "mock", ""},
		{"zones needed", "needs: [zones]\ncluster: {nodes: [a], zones: {a: z1}}\nsteps:\n  - sleep: 1s\n", "mock", "needs zones: driver profile mock lacks it"},
		{"capacity ask without a flag", "cluster: {capacity: 2Gi}\nsteps:\n  - sleep: 1s\n", "mock", "cluster.capacity 2Gi: driver profile mock has no flags.capacity"},
		{"capacity ask met", "cluster: {capacity: 2Gi}\nsteps:\n  - sleep: 1s\n", "csisim", ""},
		{"named flags", "cluster: {flags: [strictParameters]}\nsteps:\n  - sleep: 1s\n", "csisim", ""},
		{"unknown named flags", "cluster: {flags: [turbo]}\nsteps:\n  - sleep: 1s\n", "csisim", "cluster.flags turbo: driver profile csisim has no flags.extra.turbo"},
		{"driverArgs are csisim's own", "cluster: {nodes: [a], driverArgs: [--no-topology]}\nsteps:\n  - sleep: 1s\n", "mock", "cluster.driverArgs --no-topology are flags of csisim's own driver"},
		{"driverArgs on csisim", "cluster: {nodes: [a], driverArgs: [--no-topology]}\nsteps:\n  - sleep: 1s\n", "csisim", ""},
		{"topologyKey implies topology", "steps:\n  - assert: {object: 'node/${driver.topologyKey}'}\n", "mock asked",
			"needs topology: hostpath.csisim.io does not report VOLUME_ACCESSIBILITY_CONSTRAINTS (GetPluginCapabilities)"},
		{"topologyKey before the driver is asked", "steps:\n  - assert: {object: 'node/${driver.topologyKey}'}\n", "mock", ""},
		{"parameter the profile lacks", "steps:\n  - assert: {object: 'sc/${driver.parameter.kind}'}\n", "mock", "uses ${driver.parameter.kind}: driver profile mock does not set it"},
		{"expected calls of attach and stage need nothing", "steps:\n  - assert: {csiCalls: {contains: [ControllerPublishVolume, NodeStageVolume]}}\n", "mock file", ""},
		{"a fault on an attach call needs attach", "steps:\n  - csiError: {method: ControllerPublishVolume, code: Internal}\n", "mock file",
			"needs attach: hostpath.csisim.io does not report PUBLISH_UNPUBLISH_VOLUME (ControllerGetCapabilities)"},
		{"a fault on a stage call needs stageUnstage", "steps:\n  - csiError: {method: NodeStageVolume, code: Internal}\n", "mock file",
			"needs stageUnstage: hostpath.csisim.io does not report STAGE_UNSTAGE_VOLUME (NodeGetCapabilities)"},
		{"a step's needs are not the scenario's", "steps:\n  - {needs: [attach], assert: {object: pvc/a}}\n", "mock file", ""},
		{"CSI fault implies snapshots", "steps:\n  - csiError: {method: CreateSnapshot, code: Internal}\n", "mock asked", "needs snapshots: hostpath.csisim.io does not report"},
		{"missing mount propagation implies realMounts", "cluster: {nodes: [node-1]}\nsteps:\n  - missingMountPropagation: {node: node-1}\n", "mock", "needs realMounts: driver profile mock lacks it"},
		{"a restart without state implies stateDir", "steps:\n  - driverRestart: {plugin: controller, state: lose}\n", "mock", "needs stateDir: driver profile mock lacks it"},
		{"a restart with state implies survivesRestart", "steps:\n  - driverRestart: {plugin: controller, state: keep}\n", "csi-test-mock", "needs survivesRestart: driver profile csi-test-mock lacks it"},
		{"a crash implies survivesRestart", "cluster: {nodes: [node-1]}\nsteps:\n  - driverCrash: {plugin: node, node: node-1}\n", "mock", ""},
		{"more nodes than the driver serves", "cluster: {nodes: [a, b]}\nsteps:\n  - sleep: 1s\n", "csi-test-mock", "the cluster has 2 nodes: driver profile csi-test-mock serves at most 1 (maxNodes)"},
		{"as many nodes as the driver serves", "cluster: {nodes: [a]}\nsteps:\n  - sleep: 1s\n", "csi-test-mock", ""},
		// Node expansion is a capability: a skip names it, not the flag
		// set that turns it on (which implies it).
		{"node expansion the profile says its class lacks", "needs: [nodeExpansion]\ncluster: {flags: [nodeExpansion]}\nsteps:\n  - sleep: 1s\n", "csisim-file",
			"needs nodeExpansion: driver profile csisim-file lacks it"},
		{"the nodeExpansion flag set implies the need", "cluster: {flags: [nodeExpansion]}\nsteps:\n  - sleep: 1s\n", "csisim-file node-expanding",
			"needs nodeExpansion: driver profile csisim-file lacks it"},
		{"node expansion the driver does not report", "needs: [nodeExpansion]\ncluster: {flags: [nodeExpansion]}\nsteps:\n  - sleep: 1s\n", "mock asked",
			"needs nodeExpansion: hostpath.csisim.io does not report EXPAND_VOLUME (NodeGetCapabilities)"},
		{"node expansion without a flag set, before the driver is asked", "needs: [nodeExpansion]\ncluster: {flags: [nodeExpansion]}\nsteps:\n  - sleep: 1s\n", "csisim", ""},
		{"node expansion the driver reports", "needs: [nodeExpansion]\ncluster: {flags: [nodeExpansion]}\nsteps:\n  - sleep: 1s\n", "csisim node-expanding", ""},
		{"node expansion turned on by a flag set", "needs: [nodeExpansion]\ncluster: {flags: [nodeExpansion]}\nsteps:\n  - sleep: 1s\n", "csi-test-mock", ""},
		// lacks: a scenario about a driver without something.
		{"a driver that lacks what the scenario is about its lack of", "lacks: [multiNode]\nsteps:\n  - sleep: 1s\n", "mock", ""},
		{"multi-node turned on only by a flag set the scenario does not ask", "lacks: [multiNode]\nsteps:\n  - sleep: 1s\n", "csisim", ""},
		{"multi-node the cluster asks for", "lacks: [multiNode]\ncluster: {multiNode: true}\nsteps:\n  - sleep: 1s\n", "csisim",
			"is about a driver without multiNode: driver profile csisim declares capabilities.multiNode"},
		{"a capability the driver reports", "lacks: [attach]\nsteps:\n  - sleep: 1s\n", "mock asked",
			"is about a driver without attach: hostpath.csisim.io reports PUBLISH_UNPUBLISH_VOLUME (ControllerGetCapabilities)"},
		{"a capability the driver is still to be asked for", "lacks: [attach]\nsteps:\n  - sleep: 1s\n", "mock", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.src)
			name, asked := strings.CutSuffix(tt.profile, " asked")
			name, file := strings.CutSuffix(name, " file")
			name, expanding := strings.CutSuffix(name, " node-expanding")
			p := shippedProfile(t, name)
			switch {
			case asked:
				p = p.Complete(mockAnswers)
			case file:
				p = p.Complete(fileAnswers)
			case expanding:
				p = p.Complete(nodeExpandingAnswers)
			}
			got := s.SkipReason(p)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("SkipReason = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestNodeExpansionScenarios: the library's scenarios that grow a volume
// on the node skip a driver whose class's volumes do not, naming the
// capability; a driver that does, or turns it on with its flag set, runs
// them.
func TestNodeExpansionScenarios(t *testing.T) {
	for _, name := range []string{"expansion-node-pending", "expansion-offline", "expansion-online", "modify-during-expansion"} {
		s, err := Load(filepath.Join("library", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.SkipReason(shippedProfile(t, "csisim-file")); got != "needs nodeExpansion: driver profile csisim-file lacks it" {
			t.Errorf("%s with csisim-file: SkipReason = %q", name, got)
		}
		if got := s.SkipReason(shippedProfile(t, "mock").Complete(mockAnswers)); !strings.Contains(got, "nodeExpansion: hostpath.csisim.io does not report") ||
			!strings.Contains(got, "EXPAND_VOLUME (NodeGetCapabilities)") {
			t.Errorf("%s with a driver whose node reports no EXPAND_VOLUME: SkipReason = %q", name, got)
		}
		for _, p := range []*profile.Profile{shippedProfile(t, "csisim").Complete(nodeExpandingAnswers), shippedProfile(t, "csi-test-mock")} {
			if got := s.SkipReason(p); strings.Contains(got, "nodeExpansion") {
				t.Errorf("%s with %s: SkipReason = %q", name, p.File, got)
			}
		}
	}
	args := shippedProfile(t, "csi-test-mock").Args(profile.Request{Extra: []string{"nodeExpansion"}}, true)
	if !reflect.DeepEqual(args, []string{"--node-expand-required"}) {
		t.Errorf("csi-test-mock's nodeExpansion flag set: %q", args)
	}
}

func TestNotSupportedSkips(t *testing.T) {
	p := shippedProfile(t, "csisim")
	p.NotSupported = map[string]string{"x": "the driver cannot do x"}
	s := mustParse(t, "steps:\n  - sleep: 1s\n")
	if got := s.SkipReason(p); got != "driver profile csisim does not support x: the driver cannot do x" {
		t.Errorf("SkipReason = %q", got)
	}
}

func TestDriverFlags(t *testing.T) {
	s := mustParse(t, "cluster: {nodes: [a], capacity: 2Gi, volumeLimit: 3, multiNode: true, flags: [strictParameters], driverArgs: [--no-topology]}\nsteps:\n  - sleep: 1s\n")
	got := s.Cluster.DriverFlags(shippedProfile(t, "csisim"))
	want := []string{"--capacity=2Gi", "--max-volumes-per-node=3", "--multi-node", "--strict-parameters", "--no-topology"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DriverFlags = %q, want %q", got, want)
	}
}

func TestDriverVariablesInManifests(t *testing.T) {
	s := mustParse(t, `steps:
  - apply:
      manifest: |
        apiVersion: storage.k8s.io/v1
        kind: CSIDriver
        metadata: {name: '${driver.name}'}
        spec:
          attachRequired: ${driver.attachRequired}
          volumeLifecycleModes: ${driver.volumeLifecycleModes}
        ---
        apiVersion: storage.k8s.io/v1
        kind: StorageClass
        metadata: {name: '${driver.storageClass}'}
        provisioner: ${driver.name}
        parameters: ${driver.blockParameters}
        allowedTopologies: [{matchLabelExpressions: [{key: '${driver.topologyKey}', values: ['z-${namespace}']}]}]
        ---
        apiVersion: storage.k8s.io/v1
        kind: StorageClass
        metadata: {name: secret}
        provisioner: ${driver.name}
        parameters:
          ${driver.parameters}:
          csi.storage.k8s.io/provisioner-secret-name: s
`)
	p := shippedProfile(t, "csisim")
	st, err := expandStepWith(s.Steps[0], builtinVars(p, "default"), driverValues(p))
	if err != nil {
		t.Fatal(err)
	}
	driver, class := st.Apply.Objects[0].Object, st.Apply.Objects[1].Object
	want := map[string]any{"attachRequired": true, "volumeLifecycleModes": []any{"Persistent", "Ephemeral"}}
	if !reflect.DeepEqual(driver["spec"], want) || driver["metadata"].(map[string]any)["name"] != "hostpath.csisim.io" {
		t.Errorf("CSIDriver %v", driver)
	}
	if !reflect.DeepEqual(class["parameters"], map[string]any{"kind": "block"}) || class["provisioner"] != "hostpath.csisim.io" ||
		class["metadata"].(map[string]any)["name"] != profile.StorageClassName {
		t.Errorf("StorageClass %v", class)
	}
	merged := map[string]any{"kind": "directory", "csi.storage.k8s.io/provisioner-secret-name": "s"}
	if got := st.Apply.Objects[2].Object["parameters"]; !reflect.DeepEqual(got, merged) {
		t.Errorf("parameters with ${driver.parameters}: = %v, want %v", got, merged)
	}
	topo := class["allowedTopologies"].([]any)[0].(map[string]any)["matchLabelExpressions"].([]any)[0].(map[string]any)
	if topo["key"] != "topology.hostpath.csisim.io/zone" || topo["values"].([]any)[0] != "z-default" {
		t.Errorf("allowedTopologies %v", topo)
	}
}

func TestDriverVariableErrors(t *testing.T) {
	tests := []struct{ step, want string }{
		{"assert: {object: 'sc/${driver.nmae}'}", `unknown driver variable ${driver.nmae} (did you mean "name"?)`},
		{"assert: {object: 'sc/${driver.parameters}'}", "${driver.parameters} is not text"},
		{"apply: {manifest: \"{apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {a: 'p=${driver.parameters}'}}\"}", "ConfigMap/x: ${driver.parameters} is not text: write it as a whole value"},
		{"wait: {object: pvc/x, save: {namespace: '{.a}'}}", "built-in"},
		{"apply: {manifest: \"{apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {'${driver.parameters}': a}}\"}", "${driver.parameters} as a key adds its entries to the mapping and takes no value"},
		{"apply: {manifest: \"{apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {'${driver.volumeLifecycleModes}': }}\"}", "${driver.volumeLifecycleModes} is not text: write it as a whole value, or as a key alone"},
	}
	for _, tt := range tests {
		_, err := Parse("x.yaml", []byte("steps:\n  - "+tt.step+"\n"), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.step, err, tt.want)
		}
	}
}

func TestParseNeedsAndClusterAsks(t *testing.T) {
	tests := []struct{ src, want string }{
		{"needs: [snapshot]\nsteps:\n  - sleep: 1s\n", `x.yaml:1: needs: unknown capability "snapshot" (did you mean "snapshots"?)`},
		{"needs: [teleport]\nsteps:\n  - sleep: 1s\n", `x.yaml:1: needs: unknown capability "teleport"; the capabilities are attach, block`},
		{"lacks: [multinode]\nsteps:\n  - sleep: 1s\n", `x.yaml:1: lacks: unknown capability "multinode" (did you mean "multiNode"?)`},
		{"needs: [attach]\nlacks: [attach]\nsteps:\n  - sleep: 1s\n", `x.yaml:2: lacks: attach is also under needs:`},
		{"needs: [block, block]\nsteps:\n  - sleep: 1s\n", "x.yaml:1: needs: block is listed twice"},
		{"needs: block\nsteps:\n  - sleep: 1s\n", "x.yaml:1: needs must be a list"},
		{"cluster:\n  capacity: lots\nsteps:\n  - sleep: 1s\n", `x.yaml:2: capacity "lots" must be a positive quantity such as 2Gi`},
		{"cluster:\n  volumeLimit: 0\nsteps:\n  - sleep: 1s\n", "x.yaml:2: volumeLimit must be 1 or more"},
		{"cluster:\n  multiNode: yes please\nsteps:\n  - sleep: 1s\n", "x.yaml:2: multiNode must be true or false"},
		{"cluster:\n  flags: [--strict-parameters]\nsteps:\n  - sleep: 1s\n", "x.yaml:2: flags names flag sets of the driver profile"},
		{"cluster:\n  driver_args: [--x]\nsteps:\n  - sleep: 1s\n", "x.yaml:2: key driver_args is now driverArgs"},
	}
	for _, tt := range tests {
		_, err := Parse("x.yaml", []byte(tt.src), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.src, err, tt.want)
		}
	}
}

// A mountBusy step is read whole, and needs a driver that mounts for real.
func TestMountBusyStep(t *testing.T) {
	src := "steps:\n  - mountBusy: {pod: app, namespace: apps, volume: data, for: 30s}\n"
	s, err := Parse("x.yaml", []byte(src), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := fault.Fault{Kind: fault.MountBusy, Namespace: "apps", Busy: fault.Busy{Pod: "app", Volume: "data", For: 30 * time.Second}}
	if got := s.Steps[0].Fault; got == nil || *got != want {
		t.Errorf("fault %+v, want %+v", got, want)
	}
	if !slices.Contains(s.Needs, profile.RealMounts) {
		t.Errorf("needs %v, want realMounts among them", s.Needs)
	}
	if got := want.Describe(); got != "mount-busy volume data of pod app for 30s" {
		t.Errorf("Describe() = %q", got)
	}
}

// A volumeHealth step is read whole, and needs a driver that reports
// volume health and whose backend csisim can change it in.
func TestVolumeHealthStep(t *testing.T) {
	src := "steps:\n  - volumeHealth: {claim: data, namespace: apps, status: INACCESSIBLE, reason: DiskFailed, message: the disk failed}\n" +
		"  - volumeHealth: {claim: data, namespace: apps, status: Healthy}\n"
	s, err := Parse("x.yaml", []byte(src), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := fault.Fault{Kind: fault.VolumeHealth, Claim: "data", Namespace: "apps",
		Health: fault.Health{Status: "INACCESSIBLE", Reason: "DiskFailed", Message: "the disk failed"}}
	if got := s.Steps[0].Fault; got == nil || *got != want {
		t.Errorf("first step's fault %+v, want %+v", got, want)
	}
	if got := s.Steps[1].Fault; got == nil || got.Health != (fault.Health{Status: fault.Healthy}) {
		t.Errorf("second step's fault %+v, want Healthy", got)
	}
	for _, c := range []profile.Capability{profile.VolumeHealth, profile.ChangingVolumeHealth} {
		if !slices.Contains(s.Needs, c) {
			t.Errorf("needs %v, want %s among them", s.Needs, c)
		}
	}
}
