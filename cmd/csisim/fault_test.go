package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/sim/cluster"
)

func TestFaultStepIsParsedAsInAScenario(t *testing.T) {
	nodes := []string{"node-a", "node-b"}
	tests := []struct {
		args    []string
		want    fault.Fault
		wantErr string
	}{
		{args: []string{"node-loss", "node=node-b"}, want: fault.Fault{Kind: fault.NodeLoss, Node: "node-b"}},
		{args: []string{"stale-volumeattachment", "node=node-a", "claim=data"},
			want: fault.Fault{Kind: fault.StaleVolumeAttachment, Node: "node-a", Claim: "data"}},
		{args: []string{"driver-restart", "plugin=node", "node=node-b", "state=keep"},
			want: fault.Fault{Kind: fault.DriverRestart, Plugin: fault.Node, Node: "node-b"}},
		{args: []string{"controller-manager-restart"}, want: fault.Fault{Kind: fault.ControllerManagerRestart}},
		// The examples of csisim fault --help.
		{args: []string{"csi-error", "method=NodeStageVolume", "code=Internal", "times=2"},
			want: fault.Fault{Kind: fault.CSIError, Times: 2, CSI: fault.CSI{Method: "NodeStageVolume", Code: codes.Internal}}},
		{args: []string{"driver-crash", "plugin=node", "node=node-a"}, want: fault.Fault{Kind: fault.DriverCrash, Plugin: fault.Node, Node: "node-a"}},
		{args: []string{"missing-mount-propagation", "node=node-a"}, want: fault.Fault{Kind: fault.MissingMountPropagation, Node: "node-a"}},
		{args: []string{"api-server-down", "duration=30s"}, want: fault.Fault{Kind: fault.APIServerDown, API: fault.API{Duration: 30 * time.Second}}},
		{args: []string{"api-slow-writes", "latency=2s", "duration=1m"},
			want: fault.Fault{Kind: fault.APISlowWrites, API: fault.API{Latency: 2 * time.Second, Duration: time.Minute}}},
		{args: []string{"api-throttle", "times=20", "retryAfter=2s", "component=external-attacher"},
			want: fault.Fault{Kind: fault.APIThrottle, Times: 20, Component: "external-attacher", API: fault.API{RetryAfter: 2 * time.Second}}},
		{args: []string{"mount-busy", "pod=app", "volume=data", "for=30s"},
			want: fault.Fault{Kind: fault.MountBusy, Busy: fault.Busy{Pod: "app", Volume: "data", For: 30 * time.Second}}},
		{args: []string{"mount-busy", "pod=app", "volume=data"}, wantErr: "mountBusy needs for"},
		{args: []string{"api-server-down", "duration=2h"}, wantErr: "duration must be at most 1h0m0s"},
		{args: []string{"node-loss", "node=node-c"}, wantErr: `there is no node "node-c"`},
		{args: []string{"node-loss"}, wantErr: "nodeLoss needs node:"},
		{args: []string{"nodeLoss", "node=node-a"}, want: fault.Fault{Kind: fault.NodeLoss, Node: "node-a"}},
		{args: []string{"apply", "file=x.yaml"}, wantErr: `not a fault step: "apply"`},
		{args: []string{"node-loss", "node"}, wantErr: `"node" is not FIELD=VALUE`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			step, err := faultStep(tt.args[0], tt.args[1:])
			var f fault.Fault
			if err == nil {
				f, err = parseFaultStep(step, nodes)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Describe() != tt.want.Describe() || f.Claim != tt.want.Claim || f.LoseState != tt.want.LoseState || f.Times != tt.want.Times || f.API != tt.want.API || f.Busy != tt.want.Busy {
				t.Errorf("fault = %+v, want %+v", f, tt.want)
			}
		})
	}
}

func TestClassroomFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    cluster.Config
		wantErr string
	}{
		{args: nil, want: cluster.Config{Speed: 1}},
		{args: []string{"--zones", "node-a=zone-a,node-b=zone-b", "--speed", "20", "--driver-args", "--capacity=2Gi --multi-node"},
			want: cluster.Config{Speed: 20, Zones: map[string]string{"node-a": "zone-a", "node-b": "zone-b"}, DriverArgs: []string{"--capacity=2Gi", "--multi-node"}}},
		{args: []string{"--zones", "node-c=zone-a"}, wantErr: `there is no node "node-c"`},
		{args: []string{"--zones", "node-a"}, wantErr: `"node-a" is not NODE=ZONE`},
		{args: []string{"--speed", "0"}, wantErr: "must be more than 0"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			room := addClassroomFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg := cluster.Config{Nodes: []string{"node-a", "node-b"}}
			err := room.apply(&cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("apply() = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Speed != tt.want.Speed || strings.Join(cfg.DriverArgs, " ") != strings.Join(tt.want.DriverArgs, " ") ||
				len(cfg.Zones) != len(tt.want.Zones) || cfg.Zones["node-b"] != tt.want.Zones["node-b"] {
				t.Errorf("config = %+v, want %+v", cfg, tt.want)
			}
		})
	}
}
