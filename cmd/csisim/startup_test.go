package main

import (
	"strings"
	"testing"

	"github.com/csisim/csisim/trace"
)

func TestStartupPrinter(t *testing.T) {
	node := trace.Entry{Kind: trace.API, Actor: "kubelet:node-1", Verb: "create", Object: "Node node-1"}
	ns := trace.Entry{Kind: trace.API, Actor: "kube-apiserver", Verb: "create", Object: "Namespace default"}
	ask := trace.Entry{Kind: trace.CSI, Actor: "external-provisioner", Verb: "GetPluginInfo"}
	failed := trace.Entry{Kind: trace.CSI, Actor: "kubelet:node-1", Verb: "NodeGetInfo", Err: "Unavailable"}
	step := trace.Entry{Kind: trace.Step, Actor: "scenario", Verb: "apply", Object: "claim"}
	claim := trace.Entry{Kind: trace.API, Actor: "scenario", Verb: "create", Object: "PersistentVolumeClaim default/data"}
	summary := "the cluster started: 1 node, 2 API writes, 1 CSI call (--startup prints them)"
	tests := []struct {
		name    string
		show    bool
		entries []trace.Entry
		ended   bool // the run ends (flush) after the entries
		want    []string
	}{
		{"folded before the first step", false, []trace.Entry{ns, node, ask, step, claim}, true,
			[]string{summary, "STEP", "PersistentVolumeClaim"}},
		{"--startup prints every entry", true, []trace.Entry{ns, node, ask, step}, true,
			[]string{"Namespace default", "Node node-1", "GetPluginInfo", "STEP"}},
		{"a failed call is printed with what led to it", false, []trace.Entry{ns, failed, node, step}, true,
			[]string{"Namespace default", "NodeGetInfo", "the cluster started: 1 node, 1 API write, 0 CSI calls", "STEP"}},
		{"a run that ends before its first step prints all", false, []trace.Entry{ns, node, ask}, true,
			[]string{"Namespace default", "Node node-1", "GetPluginInfo"}},
		{"nothing printed while still starting", false, []trace.Entry{ns, node}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			p := newStartupPrinter(&out, tt.show)
			for _, e := range tt.entries {
				p.entry(e)
			}
			if tt.ended {
				p.flush()
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if out.Len() == 0 {
				lines = nil
			}
			if len(lines) != len(tt.want) {
				t.Fatalf("printed %d lines, want %d:\n%s", len(lines), len(tt.want), out.String())
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("line %d %q, want it to contain %q", i+1, lines[i], w)
				}
			}
		})
	}
}
