package clusterprofile

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/sim/cluster"
)

// driverProfile is a combined-layout profile whose command is the test
// binary as csisim's driver, with extra arguments, or path instead if set.
func driverProfile(t *testing.T, name, capabilities, path string, args ...string) *profile.Profile {
	t.Helper()
	if path == "" {
		path = os.Args[0]
		args = append([]string{"driver", "--endpoint={endpoint}", "--node-id={nodeID}", "--root={root}", "--state-dir={stateDir}"}, args...)
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	p, err := profile.Parse(fmt.Appendf(nil, `name: %s
start:
  layout: combined
  command: {path: %q, args: [%s], env: [CSISIM_TEST_DRIVER=1]}
capabilities: {%s}
storageClass: {parameters: {kind: directory}}
`, name, path, strings.Join(quoted, ", "), capabilities))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBadDriversRefusedAtStart: a driver that does not start, never
// listens, answers with another name, or is not what its profile claims
// is a clear error before any component starts, and leaves nothing
// behind.
func TestBadDriversRefusedAtStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *profile.Profile
		want []string
	}{
		{name: "a command that does not exist", p: driverProfile(t, "hostpath.csisim.io", "", "/nonexistent/csi-driver"),
			want: []string{"/nonexistent/csi-driver"}},
		{name: "a command that exits at once", p: driverProfile(t, "hostpath.csisim.io", "", "/bin/false"),
			want: []string{"exited before becoming ready", "exit status 1"}},
		{name: "a socket that never appears", p: driverProfile(t, "hostpath.csisim.io", "", "/bin/sleep", "600"),
			want: []string{"did not become ready", "the driver never made its socket", "does its command pass {endpoint}"}},
		{name: "another name", p: driverProfile(t, "nfs.example.com", "", "", "--driver-name=hostpath.csisim.io"),
			want: []string{"name: the profile says nfs.example.com, but the driver answers GetPluginInfo with hostpath.csisim.io"}},
		{name: "over-claimed attach, stage and topology", p: driverProfile(t, "hostpath.csisim.io", "attach: true, stageUnstage: true, topology: true, block: true", "",
			"--no-attach", "--no-stage", "--no-topology"),
			want: []string{
				"capabilities.attach: the profile says true, but hostpath.csisim.io does not report PUBLISH_UNPUBLISH_VOLUME (ControllerGetCapabilities)",
				"capabilities.topology: the profile says true, but hostpath.csisim.io does not report VOLUME_ACCESSIBILITY_CONSTRAINTS",
				"capabilities.stageUnstage: the profile says true, but hostpath.csisim.io does not report STAGE_UNSTAGE_VOLUME (NodeGetCapabilities)",
				"(the driver reports: hostpath.csisim.io",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A short directory: the sockets' paths must fit.
			tmp, err := os.MkdirTemp("", "cp")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(tmp)
			t.Setenv("TMPDIR", tmp)
			cfg, err := Config(context.Background(), tc.p, profile.Request{Nodes: []string{"node-1"}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfg.StartTimeout = 3 * time.Second
			c, err := cluster.Start(context.Background(), cfg)
			if err == nil {
				c.Close()
				t.Fatal("the cluster started")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\nwant it to contain %q", err, want)
				}
			}
			entries, _ := os.ReadDir(tmp)
			if len(entries) > 0 {
				t.Errorf("left behind in %s: %v", tmp, entries)
			}
			if out, _ := exec.Command("pgrep", "-f", tmp).Output(); len(out) > 0 {
				t.Errorf("left a process behind: %s", out)
			}
		})
	}
}

// TestBlockOverClaimRefused: CSI has no capability for raw block volumes,
// so a profile that declares them is tried with one CreateVolume of a
// block volume (and its DeleteVolume) before anything runs. csisim's
// driver started with --no-attach refuses block volumes (their loop
// devices need attaching): the profile is refused naming
// capabilities.block and the driver's answer; without --no-attach the
// same profile is accepted. Either way nothing is left behind.
func TestBlockOverClaimRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{name: "a driver that makes block volumes"},
		{name: "a driver that refuses them", args: []string{"--no-attach"}, want: []string{
			"driver profile hostpath.csisim.io does not say what its driver says of itself:",
			"capabilities.block: the profile says true, but hostpath.csisim.io does not make raw block volumes: " +
				"CreateVolume of a raw block volume (csisim-block-check, SINGLE_NODE_WRITER, 67108864 bytes) answered: rpc error: code = InvalidArgument",
			"(--no-attach)",
			"(the driver reports: hostpath.csisim.io",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp, err := os.MkdirTemp("", "cp")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(tmp)
			t.Setenv("TMPDIR", tmp)
			p := driverProfile(t, "hostpath.csisim.io", "block: true", "", tc.args...)
			p.StorageClass.BlockParameters = map[string]string{"kind": "block", "csi.storage.k8s.io/fstype": "ext4"}
			_, err = Ask(context.Background(), p, Options{})
			switch {
			case len(tc.want) == 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case len(tc.want) > 0 && err == nil:
				t.Fatal("the profile was not refused")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\nwant it to contain %q", err, want)
				}
			}
			entries, _ := os.ReadDir(tmp)
			if len(entries) > 0 {
				t.Errorf("left behind in %s: %v", tmp, entries)
			}
			if out, _ := exec.Command("pgrep", "-f", tmp).Output(); len(out) > 0 {
				t.Errorf("left a process behind: %s", out)
			}
		})
	}
}
