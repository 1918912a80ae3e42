package faultproxy

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/fault"
)

func TestRuleFor(t *testing.T) {
	tests := []struct {
		f       fault.Fault
		want    string // the rule as String renders it
		wantErr string
	}{
		{f: fault.Fault{Kind: fault.CSIError, Times: 1, CSI: fault.CSI{Method: "NodeStageVolume", Code: codes.Unavailable}},
			want: "NodeStageVolume times=1 error=Unavailable"},
		{f: fault.Fault{Kind: fault.CSIError, Node: "node-2", CSI: fault.CSI{Method: "ControllerPublishVolume", Volume: "vol-1", Code: codes.ResourceExhausted, Message: "no slots"}},
			want: `ControllerPublishVolume vol=vol-1 node=node-2 error=ResourceExhausted msg="no slots"`},
		{f: fault.Fault{Kind: fault.CSIDelay, Times: 2, CSI: fault.CSI{Method: "Node*", Delay: 3 * time.Second}},
			want: "Node* times=2 delay=3s"},
		{f: fault.Fault{Kind: fault.CSIHang, CSI: fault.CSI{Method: "ControllerPublishVolume"}}, want: "ControllerPublishVolume hang"},
		{f: fault.Fault{Kind: fault.CSIHang, CSI: fault.CSI{Method: "CreateVolume", Delay: time.Minute}}, want: "CreateVolume hang=1m0s"},
		{f: fault.Fault{Kind: fault.DriverCrashMidCall, Times: 1, Node: "node-1", CSI: fault.CSI{Method: "NodeStageVolume", FirstAttempt: true}},
			want: "NodeStageVolume node=node-1 times=1 first-per-volume crash after"},
		{f: fault.Fault{Kind: fault.CSIHeal}, wantErr: "csi-heal is not a fault a proxy rule makes"},
		{f: fault.Fault{Kind: fault.NodeLoss, Node: "n"}, wantErr: "node-loss is not a fault a proxy rule makes"},
		{f: fault.Fault{Kind: fault.CSIError, CSI: fault.CSI{Method: "NodeStage", Code: codes.Internal}}, wantErr: `method "NodeStage" is not a CSI method`},
		{f: fault.Fault{Kind: fault.CSIError, CSI: fault.CSI{Method: "NodeStageVolume"}}, wantErr: "error action needs a gRPC error code"},
		{f: fault.Fault{Kind: fault.CSIDelay, CSI: fault.CSI{Method: "NodeStageVolume"}}, wantErr: "delay action needs a positive delay"},
	}
	for _, tt := range tests {
		r, err := RuleFor(tt.f)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want %q", tt.f.Describe(), err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.f.Describe(), err)
		case r.String() != tt.want:
			t.Errorf("%s: rule %q, want %q", tt.f.Describe(), r.String(), tt.want)
		}
	}
}

func TestHeals(t *testing.T) {
	stage := Rule{Method: "NodeStageVolume", VolumeID: "vol-1", NodeID: "node-1"}
	nodeAll := Rule{Method: "Node*"}
	heal := func(method, volume, node string) fault.Fault {
		return fault.Fault{Kind: fault.CSIHeal, Node: node, CSI: fault.CSI{Method: method, Volume: volume}}
	}
	tests := []struct {
		name string
		heal fault.Fault
		r    Rule
		want bool
	}{
		{"heal everything", heal("", "", ""), stage, true},
		{"same method", heal("NodeStageVolume", "", ""), stage, true},
		{"pattern over the method", heal("Node*", "", ""), stage, true},
		{"the very pattern", heal("Node*", "", ""), nodeAll, true},
		{"a method of the pattern heals not the pattern", heal("NodeStageVolume", "", ""), nodeAll, false},
		{"other method", heal("NodePublishVolume", "", ""), stage, false},
		{"same volume", heal("", "vol-1", ""), stage, true},
		{"other volume", heal("", "vol-2", ""), stage, false},
		{"same node", heal("", "", "node-1"), stage, true},
		{"other node", heal("", "", "node-2"), stage, false},
		{"not a heal", fault.Fault{Kind: fault.CSIError}, stage, false},
	}
	for _, tt := range tests {
		if got := Heals(tt.heal, tt.r); got != tt.want {
			t.Errorf("%s: Heals = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestIsMethodAndServiceMethods(t *testing.T) {
	for m, want := range map[string]string{"NodeStageVolume": "", "Node*": "", "*": "", "/csi.v1.Node/*": "",
		"": "method is empty", "NodeStage": "not a CSI method", "Node[": "method pattern"} {
		err := IsMethod(m)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("IsMethod(%q) = %v, want %q", m, err, want)
		}
	}
	node := ServiceMethods("Node")
	if len(node) == 0 || node[0] != "NodeStageVolume" {
		t.Errorf("ServiceMethods(Node) = %v, want NodeStageVolume first", node)
	}
	if got := ServiceMethods("Nope"); got != nil {
		t.Errorf("ServiceMethods(Nope) = %v, want nil", got)
	}
}

func TestParseCode(t *testing.T) {
	for s, want := range map[string]codes.Code{"Unavailable": codes.Unavailable, "UNAVAILABLE": codes.Unavailable,
		"resource_exhausted": codes.ResourceExhausted, "14": codes.Unavailable} {
		if got, err := ParseCode(s); err != nil || got != want {
			t.Errorf("ParseCode(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for s, want := range map[string]string{"Unavailabel": `unknown gRPC code "Unavailabel"`, "17": "no gRPC code 17", "-1": "no gRPC code -1"} {
		if _, err := ParseCode(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCode(%q): error %v, want %q", s, err, want)
		}
	}
}
