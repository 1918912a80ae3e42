package csisimtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/sim/clusterprofile"
)

// defaultDriver is the profile a Cluster runs when Options.Driver is empty.
const defaultDriver = "mock"

// loadProfile reads the profile nameOrFile names: a file, or a profile
// csisim ships (built into csisim, so that a driver repository needs no
// checkout of csisim).
func loadProfile(nameOrFile string) (*profile.Profile, error) {
	if nameOrFile == "" {
		nameOrFile = defaultDriver
	}
	return profiles.Load(nameOrFile)
}

// clusterConfig is how a profile becomes the simulator's configuration:
// the one way csisim run starts a driver (package clusterprofile), which
// builds a driver the profile says how to build (start.build) once into
// the user's cache. csisim's own driver ({csisim} in the profile's
// commands) is built into the test's own directory, dir: the test binary
// is not csisim.
func clusterConfig(ctx context.Context, p *profile.Profile, opts Options, dir string) (cluster.Config, error) {
	n := opts.Nodes
	if n <= 0 {
		n = 1
	}
	r := profile.Request{HealthMonitor: opts.HealthMonitor, SELinux: opts.SELinuxNodes}
	for i := 1; i <= n; i++ {
		r.Nodes = append(r.Nodes, fmt.Sprintf("node-%d", i))
	}
	cfg, err := clusterprofile.Config(ctx, p, r, clusterprofile.Options{BuildLog: opts.DriverLog})
	if err != nil {
		return cluster.Config{}, err
	}
	cfg.Seed, cfg.DriverLog = opts.Seed, opts.DriverLog
	extras := make([]scenarios.ExtraDriver, len(opts.ExtraDrivers))
	ours := p.CSISimDriver()
	for i, d := range opts.ExtraDrivers {
		extras[i] = scenarios.ExtraDriver{Profile: d.Profile, Name: d.Name}
		if ep, err := profiles.Get(d.Profile); err == nil && ep.CSISimDriver() {
			ours = true
		}
	}
	if err := clusterprofile.AddDrivers(ctx, &cfg, extras, r, clusterprofile.Options{BuildLog: opts.DriverLog}); err != nil {
		return cluster.Config{}, err
	}
	if ours {
		if cfg.DriverBinary, err = buildCSISim(ctx, dir); err != nil {
			return cluster.Config{}, err
		}
	}
	return cfg, nil
}

// csisimCommand is the package of the csisim command, whose `csisim
// driver` is csisim's own CSI driver.
const csisimCommand = "github.com/csisim/csisim/cmd/csisim"

// buildCSISim builds the csisim command into dir, from the version of
// csisim the test's module requires (Go's build cache makes a rebuild
// cheap).
func buildCSISim(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "csisim")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, csisimCommand)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building csisim's driver (go build %s): %w\n%s", csisimCommand, err, out)
	}
	return bin, nil
}

// installDrivers creates what deploying the drivers puts in the cluster
// (driverObjects): the one under test's, unless its own manifests did
// (Options.Deploy), then each extra driver's, whose StorageClass is named
// after it.
func (c *Cluster) installDrivers(p *profile.Profile, main bool, extras []ExtraDriver) error {
	var objects []runtime.Object
	if main {
		objects = driverObjects(p.Complete(c.sim.DriverInfo()), c.sim.DriverName())
	}
	for _, d := range extras {
		ep, err := profiles.Get(d.Profile)
		if err != nil {
			return err
		}
		info, _ := c.sim.DriverInfoOf(d.Name)
		drv, sc := ep.Complete(info).ExtraObjects(d.Name)
		objects = append(objects, drv, sc)
	}
	for _, obj := range objects {
		if _, err := c.applyAny(obj); err != nil {
			return fmt.Errorf("installing the drivers: %w", err)
		}
	}
	return nil
}

// driverObjects are what deploying the driver puts in the cluster, from
// its profile: its CSIDriver and the default StorageClass
// profile.StorageClassName.
func driverObjects(p *profile.Profile, driverName string) []runtime.Object {
	drv, sc := p.Objects(driverName, profile.StorageClassName)
	return []runtime.Object{drv, sc}
}

// Prepare builds the driver of a profile (as Options.Driver names it) if
// its profile says how, without starting anything: for a Ginkgo suite's
// SynchronizedBeforeSuite, so that parallel processes (ginkgo -p) find
// the driver built instead of each building it at once.
func Prepare(ctx context.Context, driver string) error {
	p, err := loadProfile(driver)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "csisimtest-prepare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	_, err = clusterConfig(ctx, p, Options{}, dir)
	return err
}
