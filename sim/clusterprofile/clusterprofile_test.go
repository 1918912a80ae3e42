package clusterprofile

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/sim/cluster"
)

func load(t *testing.T, name string) *profile.Profile {
	t.Helper()
	p, err := profile.Load(filepath.Join("..", "..", profile.Dir, name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfig(t *testing.T) {
	zones := map[string]string{"node-1": "z1"}
	thirdParty := &profile.Profile{Name: "hostpath.csi.k8s.io", Start: profile.Start{Layout: profile.Combined,
		Command: &profile.Command{Path: "/bin/hostpathplugin", Args: []string{"--endpoint={endpoint}", "--nodeid={nodeID}"}}},
		Flags: profile.Flags{VolumeLimit: []string{"--maxvolumespernode={limit}"}, Extra: map[string][]string{"ephemeral": {"--ephemeral"}}}}
	for _, tc := range []struct {
		name    string
		p       *profile.Profile
		r       profile.Request
		opts    Options
		check   func(cluster.Config) string // "" when cfg is right
		wantErr string
	}{
		{
			name: "csisim's driver: split, flags for what the scenario asks, raw driver args",
			p:    load(t, "csisim"),
			r:    profile.Request{Nodes: []string{"node-1", "node-2"}, Zones: zones, Capacity: "3Gi", VolumeLimit: 2, DriverArgs: []string{"--strict-parameters"}},
			check: func(cfg cluster.Config) string {
				ctrl, node := strings.Join(cfg.ControllerDriver.Args, " "), strings.Join(cfg.Driver.Args, " ")
				switch {
				case cfg.Layout != cluster.LayoutSplit || cfg.Mock || cfg.NoMounts:
					return fmt.Sprintf("layout %s mock %v noMounts %v", cfg.Layout, cfg.Mock, cfg.NoMounts)
				case cfg.Driver.Path != "{csisim}" || !strings.Contains(ctrl, "--mode controller") || !strings.Contains(node, "--mode node"):
					return "controller " + ctrl + "; node " + node
				case !strings.HasSuffix(ctrl, "--capacity=3Gi --strict-parameters"):
					return "controller args " + ctrl
				case !strings.HasSuffix(node, "--capacity=3Gi --max-volumes-per-node=2 --strict-parameters"):
					return "node args " + node
				case strings.Join(cfg.ZoneArgs, " ") != "--zone {zone}":
					return fmt.Sprintf("zone args %q", cfg.ZoneArgs)
				}
				return ""
			},
		},
		{
			name: "a scenario's driver name for csisim's driver",
			p:    load(t, "csisim"), opts: Options{DriverName: "other.example.com"},
			check: func(cfg cluster.Config) string {
				if cfg.DriverName != "other.example.com" {
					return "driver name " + cfg.DriverName
				}
				return ""
			},
		},
		{
			name: "the mock runs in process",
			p:    load(t, "mock"), r: profile.Request{Nodes: []string{"node-1"}},
			check: func(cfg cluster.Config) string {
				if !cfg.Mock || cfg.Driver.Path != "" || cfg.DriverName != "hostpath.csisim.io" {
					return fmt.Sprintf("%+v", cfg)
				}
				return ""
			},
		},
		{
			name: "a combined third-party driver",
			p:    thirdParty, r: profile.Request{VolumeLimit: 3, Extra: []string{"ephemeral"}},
			check: func(cfg cluster.Config) string {
				if cfg.Layout != cluster.LayoutCombined || cfg.ControllerDriver.Path != "" || !cfg.NoMounts ||
					strings.Join(cfg.Driver.Args, " ") != "--endpoint={endpoint} --nodeid={nodeID} --maxvolumespernode=3 --ephemeral" {
					return fmt.Sprintf("%+v", cfg)
				}
				return ""
			},
		},
		{name: "raw driver args for another driver", p: thirdParty, r: profile.Request{DriverArgs: []string{"--capacity=1Gi"}},
			wantErr: `cluster.driverArgs ["--capacity=1Gi"] are flags of csisim's own driver, which this profile does not run; its flags for scenario needs are flags.volumeLimit`},
		{
			name: "zones for a driver without flags.zone label the nodes only",
			p:    thirdParty, r: profile.Request{Nodes: []string{"node-1"}, Zones: zones},
			check: func(cfg cluster.Config) string {
				if cfg.Zones["node-1"] != "z1" || len(cfg.ZoneArgs) > 0 || strings.Contains(strings.Join(cfg.Driver.Args, " "), "z1") {
					return fmt.Sprintf("zones %v, zone args %q, driver args %q", cfg.Zones, cfg.ZoneArgs, cfg.Driver.Args)
				}
				return ""
			},
		},
		{name: "capacity without flags.capacity", p: thirdParty, r: profile.Request{Capacity: "1Gi"}, wantErr: "no flags.capacity"},
		{name: "an unknown flag set", p: thirdParty, r: profile.Request{Extra: []string{"noTopology"}}, wantErr: "no flags.extra.noTopology"},
		{name: "flags for the mock", p: load(t, "mock"), r: profile.Request{DriverArgs: []string{"--capacity=1Gi"}}, wantErr: "not supported by driver profile"},
		{name: "renaming a driver that takes no name", p: thirdParty, opts: Options{DriverName: "x.example.com"}, wantErr: "cannot be started as x.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Config(context.Background(), tc.p, tc.r, tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Config: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tc.check(cfg); msg != "" {
				t.Fatal(msg)
			}
		})
	}
}

func TestUnsupportedIsTyped(t *testing.T) {
	_, err := Config(context.Background(), load(t, "mock"), profile.Request{Capacity: "1Gi"}, Options{})
	var u *profile.Unsupported
	if !errors.As(err, &u) || u.Reason == "" {
		t.Fatalf("Config: %v, want a *profile.Unsupported", err)
	}
}
