// Command csisim emulates the Kubernetes CSI volume lifecycle on one
// machine: it runs scenarios against a simulated cluster whose components
// talk to real CSI drivers over gRPC, and prints a timeline of every API
// write and CSI call.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `csisim emulates the Kubernetes CSI volume lifecycle on one machine.

Usage:
  csisim run [flags] SCENARIO.yaml   run a scenario on the simulator and print its timeline
  csisim diff [flags] SCENARIO.yaml  run a scenario on the simulator and on a real control plane and report the differences
  csisim serve [flags]               run a simulated cluster for kubectl until Ctrl-C (see csisim serve --help)
  csisim explain [flags] KIND/NAME   say why an object is stuck, from a live cluster or a run's JSON timeline (--trace)
  csisim fault FAULT [FIELD=VALUE ...]  make a fault happen on a cluster of csisim serve (see csisim fault --help)
  csisim driver [flags]              run csisim's CSI driver on a unix socket (see csisim driver --help)
  csisim registrar [flags]           register a CSI node plugin with a real kubelet (see csisim registrar --help)
  csisim livenessprobe [flags]       serve /healthz for a CSI driver, as the livenessprobe sidecar does
  csisim test --driver PROFILE [flags]  test a CSI driver: csi-sanity, then every library scenario it can run (see csisim test --help)
  csisim sanity --driver PROFILE     run csi-sanity against the driver of a profile
  csisim clean [--dry-run]           remove what killed runs left behind (processes, loop devices, mounts, files)
  csisim scale [--claims N] [--nodes M]  print a scale scenario: N claims and pods on M nodes, created and deleted
  csisim help                        show this help

Run 'csisim run --help' for the flags of run.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runScenario(args[1:], stdout, stderr)
	case "diff":
		return diffScenario(args[1:], stdout, stderr)
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "explain":
		return explainMain(args[1:], stdout, stderr)
	case "fault":
		return faultMain(args[1:], stdout, stderr)
	case "driver":
		return driverMain(args[1:], stdout, stderr)
	case "registrar":
		return registrarMain(args[1:], stdout, stderr)
	case "livenessprobe":
		return livenessProbeMain(args[1:], stdout, stderr)
	case "clean":
		return clean(args[1:], stdout, stderr)
	case "test":
		return testDriver(args[1:], stdout, stderr)
	case "sanity":
		return sanityMain(args[1:], stdout, stderr)
	case "test-scenario":
		return testScenarioMain(args[1:], stdout, stderr)
	case "scale":
		return scaleScenario(args[1:], stdout, stderr)
	case "cni":
		return cniPlugin(os.Stdin, stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "csisim: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
