package scenarios

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/drivers/profile"
)

// fileAnswers is what a file-storage driver says of itself: a controller
// that creates volumes, no PUBLISH_UNPUBLISH_VOLUME, no
// STAGE_UNSTAGE_VOLUME.
var fileAnswers = driverinfo.Info{Name: "hostpath.csisim.io", Capabilities: driverinfo.Capabilities{
	Plugin:     map[csi.PluginCapability_Service_Type]bool{csi.PluginCapability_Service_CONTROLLER_SERVICE: true},
	Controller: map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME: true},
	Node:       map[csi.NodeServiceCapability_RPC_Type]bool{},
}, NodeInfo: &driverinfo.NodeInfo{ID: "node-1"}}

func TestFitToDriver(t *testing.T) {
	noAttachNoStage := shippedProfile(t, "mock").Complete(fileAnswers)
	attachOnly := fileAnswers
	attachOnly.Controller = map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME: true}
	tests := []struct {
		name     string
		p        *profile.Profile
		check    CSICallCheck
		calls    []string
		wantHeld bool
		wantExp  string
	}{
		{name: "a driver with both expects every call", p: shippedProfile(t, "mock").Complete(mockAnswers),
			check: CSICallCheck{Sequence: lifecycle}, calls: lifecycle, wantHeld: true,
			wantExp: "CSI calls to be exactly: " + strings.Join(lifecycle, ", ")},
		{name: "a driver not yet asked expects every call", p: shippedProfile(t, "mock"),
			check: CSICallCheck{Sequence: lifecycle}, calls: []string{"CreateVolume", "NodePublishVolume", "NodeUnpublishVolume", "DeleteVolume"},
			wantExp: "CSI calls to be exactly: " + strings.Join(lifecycle, ", ")},
		{name: "without attach and stage", p: noAttachNoStage,
			check: CSICallCheck{Sequence: lifecycle}, calls: []string{"CreateVolume", "NodePublishVolume", "NodeUnpublishVolume", "DeleteVolume"},
			wantHeld: true,
			wantExp: "CSI calls to be exactly: CreateVolume, NodePublishVolume, NodeUnpublishVolume, DeleteVolume " +
				"(no ControllerPublishVolume, NodeStageVolume, NodeUnstageVolume, ControllerUnpublishVolume: hostpath.csisim.io does not report " +
				"PUBLISH_UNPUBLISH_VOLUME (ControllerGetCapabilities), nor STAGE_UNSTAGE_VOLUME (NodeGetCapabilities))"},
		{name: "a call the driver is never asked for still fails", p: noAttachNoStage,
			check: CSICallCheck{Sequence: lifecycle}, calls: []string{"CreateVolume", "NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "DeleteVolume"}},
		{name: "without stage only", p: shippedProfile(t, "mock").Complete(attachOnly),
			check: CSICallCheck{Contains: []string{"ControllerPublishVolume", "NodeStageVolume"}}, calls: []string{"CreateVolume", "ControllerPublishVolume"},
			wantHeld: true,
			wantExp:  "CSI calls to include, in order: ControllerPublishVolume (no NodeStageVolume: hostpath.csisim.io does not report STAGE_UNSTAGE_VOLUME (NodeGetCapabilities))"},
		{name: "nothing left to include", p: noAttachNoStage,
			check: CSICallCheck{Contains: []string{"NodeUnstageVolume"}, Volume: "v"}, calls: nil, wantHeld: true,
			wantExp: "any CSI calls on volume v (no NodeUnstageVolume: hostpath.csisim.io does not report STAGE_UNSTAGE_VOLUME (NodeGetCapabilities))"},
		{name: "a pre-provisioned snapshot is not listed without LIST_SNAPSHOTS", p: noAttachNoStage,
			check: CSICallCheck{Contains: []string{"CreateSnapshot", "ListSnapshots", "DeleteSnapshot"}}, calls: []string{"CreateSnapshot", "DeleteSnapshot"},
			wantHeld: true,
			wantExp:  "CSI calls to include, in order: CreateSnapshot, DeleteSnapshot (no ListSnapshots: hostpath.csisim.io does not report LIST_SNAPSHOTS (ControllerGetCapabilities))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, st := range []Step{{Assert: &Assert{Check: Check{CSICalls: &tt.check}}}, {Wait: &Wait{Check: Check{CSICalls: &tt.check}}},
				{Consistently: &Consistently{Check: Check{CSICalls: &tt.check}}}} {
				fitted := fitToDriver(st, unaskedCallsOf(tt.p))
				var c *CSICallCheck
				switch {
				case fitted.Assert != nil:
					c = fitted.Assert.CSICalls
				case fitted.Wait != nil:
					c = fitted.Wait.CSICalls
				default:
					c = fitted.Consistently.CSICalls
				}
				v := c.Evaluate(csiLog(tt.calls...))
				if v.Held != tt.wantHeld {
					t.Errorf("%s: held = %v, want %v (%s; seen %s)", st.Action(), v.Held, tt.wantHeld, v.Expected, v.Seen)
				}
				if tt.wantExp != "" && v.Expected != tt.wantExp {
					t.Errorf("%s: expected\n  %s\nwant\n  %s", st.Action(), v.Expected, tt.wantExp)
				}
			}
			if !slices.Equal(tt.check.Sequence, lifecycle) && tt.check.Sequence != nil {
				t.Errorf("the scenario's own check changed: %v", tt.check.Sequence)
			}
		})
	}
}

func TestStepNeeds(t *testing.T) {
	s := mustParse(t, `steps:
  - apply:
      manifest: |
        {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}}
  - {needs: [attach], assert: {object: volumeattachments, count: 1}}
  - needs: [stageUnstage]
    wait: {object: pvc/data, timeout: 1s}
  - assert: {object: pvc/data}
`)
	tests := []struct {
		name string
		p    *profile.Profile
		want []Outcome
	}{
		{"a driver without attach and stage skips the checks of both", shippedProfile(t, "mock").Complete(fileAnswers), []Outcome{Passed, Skipped, Skipped, Passed}},
		{"a driver with both runs them", shippedProfile(t, "mock").Complete(mockAnswers), []Outcome{Passed, Failed, NotRun, NotRun}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster := newFakeCluster(clock.RealClock{})
			res, err := (&Runner{Backend: fakeBackend{}, Profile: tt.p}).run(context.Background(), s, cluster.objects)
			if (err != nil) != slices.Contains(tt.want, Failed) {
				t.Fatalf("err = %v", err)
			}
			for i, st := range res.Steps {
				if st.Outcome != tt.want[i] {
					t.Errorf("step %d outcome %s (%s), want %s", st.Step, st.Outcome, st.Detail, tt.want[i])
				}
			}
			if tt.want[1] == Skipped && !strings.Contains(res.Steps[1].Detail, "needs attach: hostpath.csisim.io does not report PUBLISH_UNPUBLISH_VOLUME") {
				t.Errorf("skipped step's detail %q does not name the capability", res.Steps[1].Detail)
			}
		})
	}
}

func TestStepNeedsErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"steps:\n  - {needs: [attach], sleep: 1s}\n", "x.yaml:2: step 1 (sleep): needs: only a check (wait, assert, consistently) may need a capability, not sleep"},
		{"steps:\n  - {needs: [attach], wait: {object: pvc/a, save: {x: '{.metadata.name}'}}}\n", "x.yaml:2: step 1 (wait): needs: a step that saves variables cannot be left out"},
		{"steps:\n  - {needs: [atach], assert: {object: pvc/a}}\n", `x.yaml:2: step 1 (assert): needs: unknown capability "atach" (did you mean "attach"?)`},
	}
	for _, tt := range tests {
		_, err := Parse("x.yaml", []byte(tt.src), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.src, err, tt.want)
		}
	}
}
