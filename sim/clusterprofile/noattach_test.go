package clusterprofile

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
)

// TestNoAttachNoStage runs the scenarios of csisim's driver started
// without PUBLISH_UNPUBLISH_VOLUME and STAGE_UNSTAGE_VOLUME (the csisim
// profile's flag sets noAttach and noStage, which csisim diff judges
// against the real components) on the simulator: the cluster asks the
// driver and finds neither, and the scenarios pass.
func TestNoAttachNoStage(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "testdata", "no-attach-no-stage", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	// The test binary is the driver (TestMain).
	t.Setenv("CSISIM_TEST_DRIVER", "1")
	p := profiles.MustDefault()
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ctx := context.Background()
			sc, err := scenarios.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := Config(ctx, p, sc.Cluster.Request(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfg.Seed, cfg.DriverBinary = 1, os.Args[0]
			c, err := cluster.Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := c.Close(); err != nil {
					t.Error(err)
				}
			}()
			if asked := p.Complete(c.DriverInfo()); asked.Has(profile.Attach) || asked.Has(profile.StageUnstage) {
				t.Fatalf("the driver reports %s", c.DriverInfo())
			}
			res, err := (&scenarios.Runner{Backend: c, Recorder: c.Recorder(), Clock: c.Clock(), Profile: p}).Run(ctx, sc)
			if err != nil || !res.Passed() || res.Skipped != "" {
				t.Fatalf("%s: %v (skipped: %q)", sc.Name, err, res.Skipped)
			}
		})
	}
}
