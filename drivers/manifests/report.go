package manifests

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// SimulatedSidecars are the sidecar images whose simulated sidecar csisim
// runs for the first driver, and the component that stands for each.
var SimulatedSidecars = []struct{ Image, Component string }{
	{"csi-provisioner", "external-provisioner"}, {"csi-attacher", "external-attacher"}, {"csi-resizer", "external-resizer"},
	{"csi-snapshotter", "csi-snapshotter"}, {"snapshot-controller", "snapshot-controller"},
	{"csi-external-health-monitor-controller", "external-health-monitor"},
}

// modelled says, by sidecar image and flag, what csisim does with a flag
// it honours. A flag not listed here is parsed (an unknown one fails the
// container) but has no effect.
var modelled = map[string]map[string]string{
	"csi-provisioner": {"timeout": "bounds each CSI call", "retry-interval-start": "first retry backoff",
		"retry-interval-max": "longest retry backoff", "extra-create-metadata": "CreateVolume parameters name the claim and PV",
		"default-fstype": "fsType of a class without one"},
	"csi-attacher": {"timeout": "bounds each CSI call", "retry-interval-start": "first retry backoff",
		"retry-interval-max": "longest retry backoff"},
	"csi-resizer": {"timeout": "bounds each CSI call (set, it overrides --resize-timeout and --modify-timeout)",
		"resize-timeout": "bounds ControllerExpandVolume", "modify-timeout": "bounds ControllerModifyVolume",
		"retry-interval-start": "first retry backoff", "retry-interval-max": "longest retry backoff and infeasible wait"},
	"csi-snapshotter": {"timeout": "bounds each CSI call", "retry-interval-start": "first retry backoff",
		"retry-interval-max": "longest retry backoff"},
	"csi-node-driver-registrar": {"kubelet-registration-path": "must be the driver's socket on the node, else the driver is never registered"},
}

// honouredEverywhere are the flags every sidecar that has them honours.
var honouredEverywhere = map[string]string{
	"csi-address":                    "must name the driver container's socket through a shared volume, else the sidecar never connects",
	"leader-election":                "accepted: csisim runs one replica, which leads at once",
	"leader-election-namespace":      "accepted",
	"leader-election-lease-duration": "accepted", "leader-election-renew-deadline": "accepted",
	"leader-election-retry-period": "accepted", "leader-election-labels": "accepted",
}

// notModelled says why some flags csisim parses have no effect.
var notModelled = map[string]string{
	"worker-threads": "csisim's sidecars sync one item of a queue at a time", "workers": "csisim's sidecars sync one item of a queue at a time",
	"v": "csisim's simulated sidecars keep no log",
}

// Containers says what csisim does with each container of the manifests'
// workloads, given the local command that runs the driver's image: the
// node DaemonSet's placement and its driver's image; each sidecar's flags
// by name, honoured or not; the sidecars that fail as their flags stand;
// and the containers csisim does not run.
func (s *Set) Containers(command string) (honoured, notHonoured []string) {
	np := s.Node
	placed := "placed by the DaemonSet controller"
	if np.Kind == "StatefulSet" {
		placed = "made by the StatefulSet controller and placed by the scheduler"
	}
	honoured = append(honoured,
		fmt.Sprintf("%s: its pods are %s (nodeSelector, node affinity, tolerations); "+
			"the driver is registered with a node's kubelet only while its pod there is Running", np.Workload(), placed),
		fmt.Sprintf("container %s (image %s): the node plugin, run as %s", np.Driver, np.Image, command))
	notHonoured = append(notHonoured,
		fmt.Sprintf("container %s of %s: args, env, volumeMounts and securityContext (the profile's node command and arguments run instead)",
			np.Driver, np.Workload()))
	for i := range s.Sidecars {
		h, n := s.Sidecars[i].report()
		honoured, notHonoured = append(honoured, h...), append(notHonoured, n...)
	}
	for _, sim := range SimulatedSidecars {
		if s.Sidecar(sim.Image) == nil && sim.Image != "csi-external-health-monitor-controller" {
			notHonoured = append(notHonoured, fmt.Sprintf("no Deployment or StatefulSet runs %s: the simulated %s runs all the same, with the real defaults",
				sim.Image, sim.Component))
		}
	}
	return honoured, append(notHonoured, s.notRun()...)
}

// report says, flag by flag, what csisim does with a sidecar container's
// args.
func (sc *Sidecar) report() (honoured, notHonoured []string) {
	what := fmt.Sprintf("container %s (%s) of %s", sc.Container, sc.Image, sc.Workload)
	var h, n []string
	for _, name := range sc.set {
		flag := fmt.Sprintf("--%s=%s", name, sc.Value(name))
		switch {
		case name == "feature-gates":
			gh, gn := gatesReport(sc.Image, sc.Value(name))
			h, n = append(h, gh...), append(n, gn...)
		case modelled[sc.Image][name] != "":
			h = append(h, fmt.Sprintf("%s (%s)", flag, modelled[sc.Image][name]))
		case honouredEverywhere[name] != "" && sc.Image != "livenessprobe":
			h = append(h, fmt.Sprintf("%s (%s)", flag, honouredEverywhere[name]))
		case notModelled[name] != "":
			n = append(n, fmt.Sprintf("%s (%s)", flag, notModelled[name]))
		default:
			n = append(n, flag+" (not modelled)")
		}
	}
	if len(h) > 0 {
		honoured = append(honoured, what+": "+strings.Join(h, ", "))
	}
	if len(n) > 0 {
		notHonoured = append(notHonoured, what+": "+strings.Join(n, ", "))
	}
	if len(sc.set) == 0 && modelled[sc.Image] != nil {
		honoured = append(honoured, what+": no flag set, the real defaults")
	}
	return honoured, notHonoured
}

// Failures are the sidecar containers whose flags stop them, each with
// its manifest and the real binary's words; the first driver's node
// plugin unregistered for its registrar's flags is among them.
func (s *Set) Failures() []string {
	var out []string
	for _, sc := range s.Sidecars {
		down := sc.Down()
		if down == "" {
			continue
		}
		if sc.Image == "livenessprobe" {
			down += " (csisim does not model the livenessprobe: the driver's container is not restarted for it)"
		}
		out = append(out, fmt.Sprintf("container %s (%s) of %s (%s): %s", sc.Container, sc.Image, sc.Workload, sc.Source, down))
	}
	if s.Node.Unregistered != "" {
		out = append(out, fmt.Sprintf("%s (%s): the driver is never registered with a node's kubelet: container %s: %s",
			s.Node.Workload(), s.Node.Source, s.Node.Registrar, s.Node.Unregistered))
	}
	return out
}

// notRun names, by workload, the containers csisim does not run: those
// that are neither the node plugin nor a sidecar csisim simulates.
func (s *Set) notRun() []string {
	np := s.Node
	var out []string
	for _, o := range s.Objects {
		template, ok := podTemplate(o)
		if !ok {
			continue
		}
		key := o.Obj.GetKind() + " " + o.Obj.GetNamespace() + "/" + o.Obj.GetName()
		var others []string
		for _, c := range template.Spec.Containers {
			node := key == np.Workload()
			if node && c.Name == np.Driver || slices.ContainsFunc(SimulatedSidecars, func(x struct{ Image, Component string }) bool {
				return x.Image == sidecarOf(c.Image) && s.Sidecar(x.Image) != nil && s.Sidecar(x.Image).Container == c.Name &&
					s.Sidecar(x.Image).Workload == key
			}) {
				continue
			}
			others = append(others, c.Name)
		}
		if len(others) > 0 {
			notHonoured := fmt.Sprintf("%s: containers %s are not run (their pods run csisim's workload; "+
				"the controller plugin comes from the driver profile, the registrar's registration follows the pod)", key, strings.Join(others, ", "))
			out = append(out, notHonoured)
		}
	}
	return out
}

// podTemplate is the pod template of a Deployment, StatefulSet or
// DaemonSet.
func podTemplate(o Object) (corev1.PodTemplateSpec, bool) {
	var t corev1.PodTemplateSpec
	var err error
	switch o.Obj.GetKind() {
	case "Deployment":
		var d appsv1.Deployment
		if err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, &d); err == nil {
			t = d.Spec.Template
		}
	case "StatefulSet":
		var d appsv1.StatefulSet
		if err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, &d); err == nil {
			t = d.Spec.Template
		}
	case "DaemonSet":
		var d appsv1.DaemonSet
		if err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, &d); err == nil {
			t = d.Spec.Template
		}
	default:
		return t, false
	}
	return t, err == nil
}

// gateDefaults are each sidecar's feature gates and their defaults (each
// one's pkg/features/features.go at realkube's version): csisim's
// simulated sidecar behaves as the real one with every gate at its
// default.
var gateDefaults = map[string]map[string]bool{
	"csi-provisioner": {"Topology": true, "CrossNamespaceVolumeDataSource": false, "VolumeAttributesClass": true,
		"ReleaseLeaderElectionOnExit": false},
	"csi-attacher":    {"MutableCSINodeAllocatableCount": true, "ReleaseLeaderElectionOnExit": false},
	"csi-resizer":     {"AnnotateFsResize": true, "VolumeAttributesClass": true, "ReleaseLeaderElectionOnExit": false},
	"csi-snapshotter": {"CSIVolumeGroupSnapshot": true, "ReleaseLeaderElectionOnExit": false},
}

// gatesReport says of each gate of a --feature-gates value whether csisim
// runs the sidecar as it asks: a gate set to its default is honoured, any
// other is not (csisim keeps the default; a gate the binary does not know,
// which stops it, is not checked).
func gatesReport(image, value string) (honoured, notHonoured []string) {
	for _, pair := range strings.Split(value, ",") {
		k, v, _ := strings.Cut(pair, "=")
		def, known := gateDefaults[image][k]
		switch {
		case known && strconv.FormatBool(def) == v:
			honoured = append(honoured, fmt.Sprintf("--feature-gates %s (its default, as csisim runs it)", pair))
		case known:
			notHonoured = append(notHonoured, fmt.Sprintf("--feature-gates %s (csisim runs it at its default, %t)", pair, def))
		default:
			notHonoured = append(notHonoured, fmt.Sprintf("--feature-gates %s (not a gate csisim knows of %s; not checked)", pair, image))
		}
	}
	return honoured, notHonoured
}
