package realcluster

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/fault"
)

func TestCanInject(t *testing.T) {
	csiErr := func(method string, plugin fault.Plugin, times int) fault.Fault {
		return fault.Fault{Kind: fault.CSIError, Plugin: plugin, Times: times, CSI: fault.CSI{Method: method, Code: codes.Unavailable}}
	}
	tests := []struct {
		name string
		f    fault.Fault
		// want is "" for a fault the cluster injects, else part of the
		// reason it refuses.
		want string
	}{
		{"node loss", fault.Fault{Kind: fault.NodeLoss, Node: "node-1"}, ""},
		{"controller-manager restart", fault.Fault{Kind: fault.ControllerManagerRestart}, ""},
		{"attach error once", csiErr("ControllerPublishVolume", fault.Controller, 1), ""},
		{"create error always, any plugin", csiErr("CreateVolume", "", 0), ""},
		{"controller pattern always", csiErr("Controller*", fault.Controller, 0), ""},
		{"hang of attach", fault.Fault{Kind: fault.CSIHang, CSI: fault.CSI{Method: "ControllerPublishVolume"}}, ""},
		{"heal everything", fault.Fault{Kind: fault.CSIHeal}, ""},
		{"heal of the controller's", fault.Fault{Kind: fault.CSIHeal, Plugin: fault.Controller, CSI: fault.CSI{Method: "*"}}, ""},
		{"node plugin", csiErr("NodeStageVolume", fault.Node, 1), "call their node plugins directly"},
		{"node method, any plugin", csiErr("NodeStageVolume", "", 1), "method NodeStageVolume selects node plugin calls (NodeStageVolume)"},
		{"pattern over node methods", csiErr("*", "", 0), "add plugin: controller"},
		{"heal of the node plugins", fault.Fault{Kind: fault.CSIHeal, Plugin: fault.Node}, "call their node plugins directly"},
		{"method no sidecar calls", csiErr("CreateSnapshot", fault.Controller, 0), "no sidecar here calls CreateSnapshot"},
		{"times over both sidecars", csiErr("Probe", fault.Controller, 2), "times: 2 would count per sidecar"},
		{"driver crash", fault.Fault{Kind: fault.DriverCrash, Plugin: fault.Controller}, "driver process going away"},
		{"node plugin missing", fault.Fault{Kind: fault.NodePluginMissing, Node: "node-1"}, "driver process going away"},
		{"api conflict", fault.Fault{Kind: fault.APIConflict, Component: "external-provisioner", Times: 1}, "answer 409"},
		{"watch drop", fault.Fault{Kind: fault.WatchDrop, Component: "attachdetach-controller", Resource: "pods", Times: 1}, "drop watch events"},
		{"unknown kind", fault.Fault{Kind: "meteor-strike"}, "not a fault csisim knows"},
	}
	c := &Cluster{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.CanInject(tt.f)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var uerr *fault.UnsupportedError
			if !errors.As(err, &uerr) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "realkube") {
				t.Fatalf("error %v, want a *fault.UnsupportedError naming realkube and containing %q", err, tt.want)
			}
			if uerr.Kind != tt.f.Kind {
				t.Errorf("refusal names %s, want %s", uerr.Kind, tt.f.Kind)
			}
		})
	}
}

func TestControllerProxiesFor(t *testing.T) {
	tests := []struct {
		f    fault.Fault
		want string
	}{
		{fault.Fault{Kind: fault.CSIError, Times: 1, CSI: fault.CSI{Method: "CreateVolume", Code: codes.Internal}}, "csi-provisioner"},
		{fault.Fault{Kind: fault.CSIHang, CSI: fault.CSI{Method: "ControllerUnpublishVolume"}}, "csi-attacher"},
		{fault.Fault{Kind: fault.CSIDelay, Plugin: fault.Controller, CSI: fault.CSI{Method: "*", Delay: 1}}, "csi-provisioner csi-attacher"},
		{fault.Fault{Kind: fault.CSIHeal, CSI: fault.CSI{Method: "CreateVolume"}}, "csi-provisioner csi-attacher"},
	}
	for _, tt := range tests {
		got, err := controllerProxiesFor(tt.f)
		if err != nil {
			t.Errorf("%s: %v", tt.f.Describe(), err)
			continue
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("%s: proxies of %v, want %s", tt.f.Describe(), got, tt.want)
		}
	}
}
