package main

import (
	"context"
	"strings"
	"testing"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/sim/cluster"
)

func TestDriverChoice(t *testing.T) {
	for _, tc := range []struct {
		name         string
		choice       driverChoice
		scenarioName string
		r            profile.Request
		want         func(cluster.Config) bool
		wantErr      string
	}{
		{name: "default: csisim's driver, split", want: func(c cluster.Config) bool {
			return c.Layout == cluster.LayoutSplit && c.Driver.Path == "{csisim}" && c.DriverName == "hostpath.csisim.io"
		}},
		{name: "the scenario's driver name", scenarioName: "a.example.com",
			want: func(c cluster.Config) bool { return c.DriverName == "a.example.com" }},
		{name: "--driver-name over the scenario's", choice: driverChoice{name: "b.example.com"}, scenarioName: "a.example.com",
			want: func(c cluster.Config) bool { return c.DriverName == "b.example.com" }},
		{name: "--mock-driver", choice: driverChoice{mock: true}, want: func(c cluster.Config) bool { return c.Mock }},
		{name: "--driver mock", choice: driverChoice{profile: "mock"}, want: func(c cluster.Config) bool { return c.Mock }},
		{name: "--driver-command keeps the scenario's name for a command without {driverName}",
			choice: driverChoice{command: "/bin/d --endpoint={endpoint} --nodeid={nodeID}"}, scenarioName: "a.example.com",
			want: func(c cluster.Config) bool {
				return c.DriverName == "a.example.com" && c.Layout == cluster.LayoutSplit && c.ControllerDriver.Path == "/bin/d" &&
					strings.Join(c.Driver.Args, " ") == "--endpoint={endpoint} --nodeid={nodeID}" && !c.NoMounts
			}},
		{name: "--driver-command with an unknown placeholder", choice: driverChoice{command: "/bin/d --x={nope}"}, wantErr: "unknown placeholder {nope}"},
		{name: "two ways to name the driver", choice: driverChoice{profile: "csisim", mock: true}, wantErr: "give one"},
		{name: "driver args for the mock", choice: driverChoice{mock: true}, r: profile.Request{DriverArgs: []string{"--capacity=1Gi"}},
			wantErr: "not supported by driver profile drivers/profiles/mock.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := tc.choice.clusterConfig(context.Background(), tc.r, tc.scenarioName, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(cfg) {
				t.Fatalf("config %+v", cfg)
			}
		})
	}
}
