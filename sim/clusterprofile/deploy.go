package clusterprofile

import (
	"errors"
	"fmt"
	"io"

	"github.com/csisim/csisim/drivers/manifests"
	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/sim/cluster"
)

// Deploy loads the driver's own deployment manifests at path (a file, or
// a directory's .yaml/.yml/.json files in name order) into cfg
// (cluster.Config.Deploy) for the driver profile prof, and prints to w
// what of them csisim acts on and what it does not. The one way csisim
// run, serve, test and the Go API (csisimtest.Options.Deploy) take a
// deployment. The node plugin's image must map, by the profile's images:,
// to the command the profile runs the node plugin with: the manifest's
// own args and env are not used yet. The sidecar containers' flags
// configure the simulated sidecars (sim/cluster sidecarflags.go); a
// sidecar its flags stop is named on a "fails:" line and not run.
func Deploy(cfg *cluster.Config, prof *profile.Profile, path string, w io.Writer) error {
	set, err := manifests.Load(path)
	if err != nil {
		return err
	}
	if prof == nil {
		return errors.New("deploying a driver's manifests needs a driver profile whose images: maps the node plugin's image")
	}
	name := prof.File
	if name == "" {
		name = prof.Name
	}
	command, err := set.Node.Command(prof.Images, name)
	if err != nil {
		return err
	}
	var node *profile.Command
	switch {
	case prof.Start.Mock:
		return fmt.Errorf("deploy %s: driver profile %s runs csisim's in-process mock, which no image can stand for; use a profile that starts a driver process", path, name)
	case prof.Start.Layout == profile.Combined:
		node = prof.Start.Command
	default:
		node = prof.Start.Node
	}
	if node == nil || node.Path != command {
		return fmt.Errorf("deploy %s: the image %s maps to %q in driver profile %s, which starts its node plugin with %q: "+
			"csisim runs the node plugin with the profile's command (the manifest's command is not honoured yet), so the two must agree",
			path, set.Node.Image, command, name, nodePath(node))
	}
	cfg.Deploy = set
	honoured, notHonoured := set.Containers(command)
	fmt.Fprintf(w, "deploy %s: node %s (%s), driver container %s\n", path, set.Node.Workload(), set.Node.Source, set.Node.Driver)
	for _, h := range honoured {
		fmt.Fprintf(w, "  honoured: %s\n", h)
	}
	for _, n := range notHonoured {
		fmt.Fprintf(w, "  not honoured: %s\n", n)
	}
	for _, f := range set.Failures() {
		fmt.Fprintf(w, "  fails: %s\n", f)
	}
	return nil
}

// ReportNotApplied prints the deployment's objects a started cluster left
// out, and why.
func ReportNotApplied(cl *cluster.Cluster, w io.Writer) {
	for _, n := range cl.DeployNotApplied() {
		fmt.Fprintf(w, "  not honoured: %s\n", n)
	}
}

func nodePath(c *profile.Command) string {
	if c == nil {
		return ""
	}
	return c.Path
}
