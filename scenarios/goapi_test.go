package scenarios

import (
	"context"
	"strings"
	"testing"

	"github.com/csisim/csisim/trace"
)

func TestCSICallCheckEvaluate(t *testing.T) {
	calls := []trace.Entry{
		{Kind: trace.CSI, Verb: "CreateVolume", Object: "v1"},
		{Kind: trace.CSI, Verb: "NodeGetInfo"}, // informational: left out
		{Kind: trace.CSI, Verb: "NodeStageVolume", Object: "v1"},
	}
	for _, tt := range []struct {
		name         string
		check        CSICallCheck
		held         bool
		expected     string
		explainsWith string
	}{
		{"the sequence", CSICallCheck{Sequence: []string{"CreateVolume", "NodeStageVolume"}, Volume: "v1"}, true,
			"CSI calls on volume v1 to be exactly: CreateVolume, NodeStageVolume", ""},
		{"another sequence", CSICallCheck{Sequence: []string{"NodeStageVolume"}}, false,
			"CSI calls to be exactly: NodeStageVolume", "first difference at call 1"},
		{"contains, in order", CSICallCheck{Contains: []string{"NodeStageVolume", "CreateVolume"}}, false,
			"CSI calls to include, in order: NodeStageVolume, CreateVolume", "CreateVolume not seen after NodeStageVolume"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.check.Evaluate(calls)
			if v.Held != tt.held || v.Expected != tt.expected || v.Seen != "CreateVolume, NodeStageVolume" {
				t.Fatalf("Evaluate = %+v; want held %v, expected %q, seen the two calls", v, tt.held, tt.expected)
			}
			if !strings.Contains(v.Explain, tt.explainsWith) || (tt.held && v.Explain != "") {
				t.Fatalf("explain %q; want it to say %q", v.Explain, tt.explainsWith)
			}
		})
	}
}

func TestCheckInvariantsNeedsAHistory(t *testing.T) {
	_, _, err := CheckInvariants(context.Background(), fakeBackend{}, nil)
	if err == nil || !strings.Contains(err.Error(), "keeps the run's history") {
		t.Fatalf("CheckInvariants on a backend without a history: error %v", err)
	}
}
