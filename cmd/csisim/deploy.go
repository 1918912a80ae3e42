package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/csisim/csisim/drivers/manifests"
	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/sim/cluster"
)

// deployUsage is the help of --deploy.
const deployUsage = "apply the driver's own deployment manifests (a file, or every .yaml/.yml/.json file of a directory in name order):\n" +
	"its node DaemonSet places the node plugin — the driver is registered on a node only while the DaemonSet's pod there runs;\n" +
	"the driver profile's images: maps the node plugin's image to its command. The run prints which parts csisim does not honour"

// withDeploy loads the manifests at path into cfg (cluster.Config.Deploy)
// for the driver profile prof, and prints to w what of them csisim acts on
// and what it does not. The node plugin's image must map, by the
// profile's images:, to the command the profile runs the node plugin
// with: in this slice the manifest's own args and env are not used.
func withDeploy(cfg *cluster.Config, prof *profile.Profile, path string, w io.Writer) error {
	set, err := manifests.Load(path)
	if err != nil {
		return err
	}
	if prof == nil {
		return errors.New("--deploy needs a driver profile (--driver) whose images: maps the node plugin's image")
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
		return fmt.Errorf("--deploy: driver profile %s runs csisim's in-process mock, which no image can stand for; use a profile that starts a driver process", name)
	case prof.Start.Layout == profile.Combined:
		node = prof.Start.Command
	default:
		node = prof.Start.Node
	}
	if node == nil || node.Path != command {
		return fmt.Errorf("--deploy: the image %s maps to %q in driver profile %s, which starts its node plugin with %q: "+
			"csisim runs the node plugin with the profile's command (the manifest's command is not honoured yet), so the two must agree",
			set.Node.Image, command, name, nodePath(node))
	}
	cfg.Deploy = set
	honoured, notHonoured := set.Containers(command)
	fmt.Fprintf(w, "deploy %s: node DaemonSet %s (%s), driver container %s\n", path, set.Node.Key(), set.Node.Source, set.Node.Driver)
	for _, h := range honoured {
		fmt.Fprintf(w, "  honoured: %s\n", h)
	}
	for _, n := range notHonoured {
		fmt.Fprintf(w, "  not honoured: %s\n", n)
	}
	return nil
}

// reportNotApplied prints the deployment's objects the cluster left out.
func reportNotApplied(cl *cluster.Cluster, w io.Writer) {
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
