package realcluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/realkube/apiproxy"
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
		{"a node's plugin", fault.Fault{Kind: fault.CSIError, Plugin: fault.Node, Node: "node-1", Times: 1, CSI: fault.CSI{Method: "NodeStageVolume", Code: codes.Internal}}, ""},
		{"node method on every node", csiErr("NodeStageVolume", "", 0), ""},
		{"pattern over every plugin", csiErr("*", "", 0), ""},
		{"heal of the node plugins", fault.Fault{Kind: fault.CSIHeal, Plugin: fault.Node}, ""},
		{"times over two nodes", csiErr("NodeStageVolume", fault.Node, 1), "times: 1 would count per proxy"},
		{"method no sidecar calls", csiErr("CreateSnapshot", fault.Node, 0), "no sidecar or kubelet here calls CreateSnapshot"},
		{"times over both sidecars", csiErr("Probe", fault.Controller, 2), "times: 2 would count per proxy"},
		{"driver crash", fault.Fault{Kind: fault.DriverCrash, Plugin: fault.Controller}, ""},
		{"driver restart without state", fault.Fault{Kind: fault.DriverRestart, Plugin: fault.Node, Node: "node-2", LoseState: true}, ""},
		{"node plugin missing", fault.Fault{Kind: fault.NodePluginMissing, Node: "node-1"}, ""},
		{"crash mid-call of CreateVolume", fault.Fault{Kind: fault.DriverCrashMidCall, Times: 1, CSI: fault.CSI{Method: "CreateVolume"}}, ""},
		{"crash mid-call of a node's stage", fault.Fault{Kind: fault.DriverCrashMidCall, Plugin: fault.Node, Node: "node-2", Times: 1, CSI: fault.CSI{Method: "NodeStageVolume"}}, ""},
		{"provisioner restart", fault.Fault{Kind: fault.SidecarRestart, Component: "external-provisioner"}, ""},
		{"snapshot-controller restart", fault.Fault{Kind: fault.SidecarRestart, Component: "snapshot-controller"}, ""},
		{"crash mid-call on two nodes", fault.Fault{Kind: fault.DriverCrashMidCall, Times: 1, CSI: fault.CSI{Method: "NodeStageVolume"}}, "times: 1 would count per proxy"},
		{"api conflict", fault.Fault{Kind: fault.APIConflict, Component: "external-provisioner", Times: 1}, "answer 409"},
		{"watch drop", fault.Fault{Kind: fault.WatchDrop, Component: "attachdetach-controller", Resource: "pods", Times: 1}, "drop watch events"},
		{"api server down", fault.Fault{Kind: fault.APIServerDown, API: fault.API{Duration: 30 * time.Second}}, ""},
		{"api server down for no time", fault.Fault{Kind: fault.APIServerDown}, "needs a duration"},
		{"slow writes", fault.Fault{Kind: fault.APISlowWrites, API: fault.API{Duration: time.Minute, Latency: time.Second}}, ""},
		{"slow writes of a kubelet", fault.Fault{Kind: fault.APISlowWrites, Component: "kubelet:node-2", API: fault.API{Duration: time.Minute, Latency: time.Second}}, ""},
		{"slow writes of no node's kubelet", fault.Fault{Kind: fault.APISlowWrites, Component: "kubelet:node-9", API: fault.API{Duration: time.Minute, Latency: time.Second}}, `no node "node-9"`},
		{"throttle", fault.Fault{Kind: fault.APIThrottle, Times: 3, API: fault.API{RetryAfter: time.Second}}, ""},
		{"throttle of the binder", fault.Fault{Kind: fault.APIThrottle, Component: "persistentvolume-binder", API: fault.API{Duration: time.Minute, RetryAfter: time.Second}}, ""},
		{"throttle of taint eviction", fault.Fault{Kind: fault.APIThrottle, Component: "taint-eviction-controller", Times: 1, API: fault.API{RetryAfter: time.Second}}, "node-controller's service account"},
		{"throttle of nobody", fault.Fault{Kind: fault.APIThrottle, Component: "kube-proxy", Times: 1, API: fault.API{RetryAfter: time.Second}}, `no component "kube-proxy"`},
		{"unknown kind", fault.Fault{Kind: "meteor-strike"}, "not a fault csisim knows"},
	}
	c := &Cluster{cfg: Config{Nodes: []string{"node-1", "node-2"}}}
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

func TestProxiesFor(t *testing.T) {
	tests := []struct {
		f    fault.Fault
		want string
	}{
		{fault.Fault{Kind: fault.CSIError, Times: 1, CSI: fault.CSI{Method: "CreateVolume", Code: codes.Internal}}, "csi-provisioner"},
		{fault.Fault{Kind: fault.CSIHang, CSI: fault.CSI{Method: "ControllerUnpublishVolume"}}, "csi-attacher"},
		{fault.Fault{Kind: fault.CSIDelay, Plugin: fault.Controller, CSI: fault.CSI{Method: "*", Delay: 1}}, "csi-provisioner csi-attacher csi-resizer csi-snapshotter"},
		{fault.Fault{Kind: fault.CSIHeal, CSI: fault.CSI{Method: "CreateVolume"}}, "csi-provisioner csi-attacher csi-resizer csi-snapshotter faultproxy:node-1 faultproxy:node-2"},
		{fault.Fault{Kind: fault.CSIError, Times: 1, CSI: fault.CSI{Method: "ControllerExpandVolume", Code: codes.OutOfRange}}, "csi-resizer"},
		{fault.Fault{Kind: fault.CSIHang, CSI: fault.CSI{Method: "CreateSnapshot"}}, "csi-snapshotter"},
		{fault.Fault{Kind: fault.CSIHang, CSI: fault.CSI{Method: "NodePublishVolume"}}, "faultproxy:node-1 faultproxy:node-2"},
		{fault.Fault{Kind: fault.CSIHang, Node: "node-2", CSI: fault.CSI{Method: "Node*"}}, "faultproxy:node-2"},
	}
	c := &Cluster{cfg: Config{Nodes: []string{"node-1", "node-2"}}}
	for _, tt := range tests {
		got, err := c.proxiesFor(tt.f)
		if err != nil {
			t.Errorf("%s: %v", tt.f.Describe(), err)
			continue
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("%s: proxies of %v, want %s", tt.f.Describe(), got, tt.want)
		}
	}
}

func TestAPIComponent(t *testing.T) {
	const kcm = "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abc"
	tests := []struct {
		client apiproxy.Client
		want   string
	}{
		{apiproxy.Client{UserAgent: kcm + "/system:serviceaccount:kube-system:persistent-volume-binder"}, "persistentvolume-binder"},
		{apiproxy.Client{UserAgent: kcm + "/system:serviceaccount:kube-system:attachdetach-controller"}, "attachdetach-controller"},
		{apiproxy.Client{User: "system:kube-controller-manager", UserAgent: kcm + "/shared-informers"}, "kube-controller-manager"},
		{apiproxy.Client{User: "system:kube-scheduler", UserAgent: "kube-scheduler/v1.37.2 (linux/amd64) kubernetes/abc/scheduler"}, "default-scheduler"},
		{apiproxy.Client{User: "system:node:node-2", Groups: []string{"system:nodes"}, UserAgent: "kubelet/v1.37.2"}, "kubelet:node-2"},
		{apiproxy.Client{User: "kubernetes-admin", UserAgent: "kubelet:node-1"}, "kubelet:node-1"},
		{apiproxy.Client{User: "kubernetes-admin", UserAgent: fakekube.UserAgent("kubelet", "kubelet:node-3")}, "kubelet:node-3"},
		{apiproxy.Client{User: "kubernetes-admin", UserAgent: "csi-provisioner/v6.4.0 (linux/amd64)"}, "external-provisioner"},
		{apiproxy.Client{User: "kubernetes-admin", UserAgent: "csi-snapshotter/v8.7.0"}, "csi-snapshotter"},
		{apiproxy.Client{User: "kubernetes-admin", UserAgent: "snapshot-controller/v8.7.0"}, "snapshot-controller"},
	}
	for _, tt := range tests {
		if got := apiComponent(tt.client); got != tt.want {
			t.Errorf("apiComponent(%+v) = %q, want %q", tt.client, got, tt.want)
		}
	}
}
