package main

// deployUsage is the help of --deploy (clusterprofile.Deploy).
const deployUsage = "apply the driver's own deployment manifests (a file, or every .yaml/.yml/.json file of a directory in name order):\n" +
	"its node DaemonSet places the node plugin — the driver is registered on a node only while the DaemonSet's pod there runs;\n" +
	"the driver profile's images: maps the node plugin's image to its command; the sidecar containers' flags configure the simulated sidecars\n" +
	"(--timeout, --retry-interval-start/max, --extra-create-metadata, --default-fstype, the registrar's --kubelet-registration-path).\n" +
	"The run prints each flag as honoured or not, and the sidecars whose flags stop them (fails:), which it does not run"
