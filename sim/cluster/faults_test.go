package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/fault"
)

// TestCanInjectNodeAndControlPlaneFaults checks the faults faults.go judges
// itself; the CSI, driver and API faults are judged (and tested) in
// faults_csi.go and faults_api.go.
func TestCanInjectNodeAndControlPlaneFaults(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		f    fault.Fault
		want string // "" if injected, else part of the refusal
	}{
		{"node loss", Config{}, fault.Fault{Kind: fault.NodeLoss, Node: "node-1"}, ""},
		{"kubelet restart with the mock", Config{Mock: true}, fault.Fault{Kind: fault.KubeletRestart, Node: "node-1"}, ""},
		{"missing mount propagation", Config{}, fault.Fault{Kind: fault.MissingMountPropagation, Node: "node-1"}, ""},
		{"missing mount propagation with the mock", Config{Mock: true}, fault.Fault{Kind: fault.MissingMountPropagation, Node: "node-1"},
			"the mock driver mounts nothing"},
		{"controller-manager restart without its controllers", Config{Without: []string{"attachdetach-controller", "node-controller"}},
			fault.Fault{Kind: fault.ControllerManagerRestart}, "kube-controller-manager's controllers are not simulated here"},
		{"volume health", Config{}, fault.Fault{Kind: fault.VolumeHealth, Claim: "data", Health: fault.Health{Status: fault.Healthy}}, ""},
		{"volume health with the mock", Config{Mock: true}, fault.Fault{Kind: fault.VolumeHealth, Claim: "data", Health: fault.Health{Status: fault.Healthy}},
			"the mock keeps no storage backend"},
		{"mount busy", Config{}, fault.Fault{Kind: fault.MountBusy, Busy: fault.Busy{Pod: "app", Volume: "data", For: time.Minute}}, ""},
		{"mount busy with the mock", Config{Mock: true}, fault.Fault{Kind: fault.MountBusy, Busy: fault.Busy{Pod: "app", Volume: "data", For: time.Minute}},
			"the mock driver mounts nothing"},
		{"mount busy for no time", Config{}, fault.Fault{Kind: fault.MountBusy, Busy: fault.Busy{Pod: "app", Volume: "data"}}, "a duration above 0"},
		{"unknown kind", Config{}, fault.Fault{Kind: "meteor-strike"}, "not a fault the simulator knows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Cluster{cfg: tt.cfg}).CanInject(tt.f)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var uerr *fault.UnsupportedError
			if !errors.As(err, &uerr) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want a *fault.UnsupportedError containing %q", err, tt.want)
			}
		})
	}
}
