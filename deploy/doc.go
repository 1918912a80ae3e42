// Package deploy holds what it takes to run csisim's CSI driver
// (drivers/hostpath) on a real cluster: deploy/Dockerfile builds the image,
// deploy/kubernetes/ holds the manifests, and
// deploy/kubernetes/variants/ the deliberately broken variants, applied by
// hand; deploy/seed-sweep/ runs seed sweeps of the simulator as an
// Indexed Job, and deploy/ci/ in a CI matrix. README.md describes them.
//
// The Go package itself only names what the manifests must agree on; its
// tests check that they do (parsed with the client-go scheme, offline) and,
// when CSISIM_REALKUBE_KUBECONFIG points at a real API server, that the
// server accepts them (server-side dry run).
package deploy

// What the manifests under kubernetes/ must agree on. The tests in this
// package check every manifest against these.
const (
	// DriverName is the CSI driver name: the CSIDriver object, the
	// StorageClass provisioner, the VolumeSnapshotClass driver, the
	// driver's --driver-name and the kubelet plugin directory.
	DriverName = "hostpath.csisim.io"

	// Namespace holds every namespaced object of the deployment.
	Namespace = "csisim"

	// Image is the driver image deploy/Dockerfile builds; e2e/kind/run.sh
	// builds it under this name and loads it into the kind nodes, so the
	// manifests use imagePullPolicy IfNotPresent.
	Image = "csisim:e2e"

	// StorageClass is the default StorageClass; it matches the one in
	// scenarios/library/manifests/driver.yaml field for field (apart
	// from labels and the default-class annotation), so that a scenario
	// applying that file on a deployed cluster replaces it without
	// touching an immutable field.
	StorageClass = "csisim-sc"

	// SnapshotClass is the default VolumeSnapshotClass, named as the
	// scenario library's (scenarios/library/manifests/snapshotclass.yaml).
	SnapshotClass = "csisim-snapclass"

	// ControllerDeployment and NodeDaemonSet are the driver's workloads;
	// PluginContainer is the driver's container in both.
	ControllerDeployment = "csisim-controller"
	NodeDaemonSet        = "csisim-node"
	PluginContainer      = "csisim-plugin"

	// ComponentLabel tells the controller pod (ComponentController) from
	// the node plugin pods (ComponentNode); PartOfLabel=PartOf marks all.
	ComponentLabel      = "app.kubernetes.io/component"
	ComponentController = "controller"
	ComponentNode       = "node"
	PartOfLabel         = "app.kubernetes.io/part-of"
	PartOf              = "csisim"

	// VariantAnnotation on a pod template names the variant it comes
	// from; the regular manifests do not set it.
	VariantAnnotation = "csisim.io/variant"

	// StorageDir is the hostPath directory, on every node, below which
	// the driver keeps its storage root (StorageDir/root) and the state of
	// each plugin process (StorageDir/state/<node or "controller">). The
	// controller and all node plugins must see the same files there; on
	// kind, e2e/kind/run.sh mounts one directory of the Docker host at
	// this path into every node container.
	StorageDir = "/var/lib/csisim"

	// KubeletDir is kubelet's root directory on the nodes.
	KubeletDir = "/var/lib/kubelet"

	// ManifestDir is the directory of the manifests, relative to deploy/;
	// `kubectl apply -f` of it deploys the driver (subdirectories are not
	// part of it).
	ManifestDir = "kubernetes"
	// NodeManifest is the file, in ManifestDir, of the node DaemonSet.
	NodeManifest = "31-node.yaml"
	// SeedSweepDir is the directory, relative to deploy/, of the Indexed
	// Job that runs a seed sweep (csisim run --seeds) in shards; it is not
	// part of the deployment.
	SeedSweepDir = "seed-sweep"
	// ScenarioLibraryDir is where the image holds scenarios/library.
	ScenarioLibraryDir = "/usr/share/csisim/scenarios/library"
	// NoMountPropagationVariant is the directory, relative to ManifestDir,
	// of the node DaemonSet without Bidirectional mount propagation. It
	// holds a file of the same name as NodeManifest.
	NoMountPropagationVariant = "variants/no-mount-propagation"
	// BuiltHereVariant is the directory, relative to ManifestDir, of the
	// controller Deployment and node DaemonSet for a cluster whose images
	// are built on the machine (e2e/kind/prepare.sh): csisim's registrar
	// and livenessprobe stand in for the sidecars that cannot be built
	// there. It holds files of the same names as the regular ones.
	BuiltHereVariant = "variants/built-here"
)

// Sidecar images, pinned. The provisioner, attacher, resizer and
// snapshotter versions are those realkube/build compiles, so the kind and
// realkube backends run the same sidecars.
const (
	ProvisionerImage = "registry.k8s.io/sig-storage/csi-provisioner:v6.4.0"
	AttacherImage    = "registry.k8s.io/sig-storage/csi-attacher:v4.13.0"
	ResizerImage     = "registry.k8s.io/sig-storage/csi-resizer:v2.3.0"
	SnapshotterImage = "registry.k8s.io/sig-storage/csi-snapshotter:v8.7.0"
	LivenessImage    = "registry.k8s.io/sig-storage/livenessprobe:v2.19.0"
	RegistrarImage   = "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0"

	// SnapshotterVersion is the external-snapshotter release whose CRDs
	// and snapshot-controller e2e/kind/run.sh installs.
	SnapshotterVersion = "v8.7.0"
)
