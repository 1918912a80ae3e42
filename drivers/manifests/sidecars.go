package manifests

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Sidecar is a kubernetes-csi sidecar container of the manifests' workloads
// with its args parsed as its binary parses them.
type Sidecar struct {
	// Image is the sidecar by its image's name: csi-provisioner,
	// csi-attacher, ..., csi-node-driver-registrar, livenessprobe.
	Image string
	// Container is the container's name; Workload the workload's kind
	// and namespace/name; Source the manifest file#document.
	Container, Workload, Source string
	// Args are the container's args after the kubelet's $(VAR) expansion.
	Args []string
	// values are every flag's value (set or default) by name; set are
	// the names the args set, in the order the flag package visits them.
	values map[string]string
	set    []string
	// Err is what the binary refuses in its args (an unknown flag, a value
	// it cannot parse), with the flag package's own words: it exits at
	// start with status 2 and its container goes to CrashLoopBackOff.
	Err error
	// Unconnected says why the sidecar never reaches its driver: its
	// --csi-address names no socket the driver container beside it serves
	// through a shared volume. The real one then waits in csi-lib-utils'
	// connection.Connect, logging "Still connecting", and does nothing.
	Unconnected string
}

// Down is why the sidecar does not work at all ("" if it does): it exits
// at start, or never connects to its driver.
func (s *Sidecar) Down() string {
	switch {
	case s.Err != nil:
		return fmt.Sprintf("%s; the real %s exits at start with status 2 and its container goes to CrashLoopBackOff", s.Err, s.Image)
	case s.Unconnected != "" && (s.Image == "csi-provisioner" || s.Image == "csi-attacher"):
		return s.Unconnected + "; after 30s it gives up, exits 1 and its container goes to CrashLoopBackOff (exit.go)"
	case s.Unconnected != "":
		return s.Unconnected
	}
	return ""
}

// IsSet says whether the args set the flag.
func (s *Sidecar) IsSet(name string) bool { return slices.Contains(s.set, name) }

// SetFlags are the names of the flags the args set.
func (s *Sidecar) SetFlags() []string { return s.set }

// Value is the flag's value as the binary sees it, set or default.
func (s *Sidecar) Value(name string) string { return s.values[name] }

// Duration is a duration flag's value; 0 if it has none.
func (s *Sidecar) Duration(name string) time.Duration {
	d, _ := time.ParseDuration(s.values[name])
	return d
}

// Bool is a bool flag's value.
func (s *Sidecar) Bool(name string) bool { return s.values[name] == "true" }

// Sidecar is the sidecar container of that image csisim configures its
// simulated sidecar from, or nil: the first of a workload other than the
// node plugin's, else the node plugin's own (csi-driver-host-path runs
// its sidecars in its node plugin's StatefulSet).
func (s *Set) Sidecar(image string) *Sidecar {
	var ofNode *Sidecar
	for i := range s.Sidecars {
		sc := &s.Sidecars[i]
		switch {
		case sc.Image != image:
		case sc.Workload != s.Node.Workload():
			return sc
		case ofNode == nil:
			ofNode = sc
		}
	}
	return ofNode
}

// findSidecars parses the args of every known sidecar container of the
// manifests' Deployments, StatefulSets and DaemonSets.
func (s *Set) findSidecars() {
	for _, o := range s.Objects {
		template, ok := podTemplate(o)
		if !ok {
			continue
		}
		workload := o.Obj.GetKind() + " " + o.Obj.GetNamespace() + "/" + o.Obj.GetName()
		spec := &template.Spec
		for i := range spec.Containers {
			c := &spec.Containers[i]
			image := sidecarOf(c.Image)
			if image == "" {
				continue
			}
			sc := Sidecar{Image: image, Container: c.Name, Workload: workload, Source: o.Source,
				Args: expandArgs(c.Args, envOf(c, o.Obj.GetNamespace()))}
			sc.values, sc.set, sc.Err = parseFlags(image, sc.Args)
			if sc.Err == nil && image != "snapshot-controller" {
				sc.Unconnected = unconnected(spec, c, sc.values["csi-address"])
			}
			s.Sidecars = append(s.Sidecars, sc)
		}
	}
}

// unconnected says why a sidecar with that --csi-address reaches no
// driver in its pod, "" if it does or csisim cannot tell: the address's
// directory must be a volume the sidecar mounts, and a container that is
// no sidecar must mount that volume and, if its args or env name a
// socket, name the same one there (csi-lib-utils connection.Connect waits
// for the socket forever).
func unconnected(spec *corev1.PodSpec, sidecar *corev1.Container, address string) string {
	path := strings.TrimPrefix(address, "unix://")
	vol := volumeAt(sidecar, path)
	still := fmt.Sprintf("the real one logs \"Still connecting\" address=%q and never reaches the driver", address)
	if vol == "" {
		return fmt.Sprintf("its --csi-address %s is on no volume it mounts: %s", address, still)
	}
	var served []string
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if sidecarOf(c.Image) != "" || !mounts(c, vol) {
			continue
		}
		want := filepath.Join(mountPathOf(c, vol), filepath.Base(path))
		sockets := socketsOf(c)
		if len(sockets) == 0 || slices.Contains(sockets, want) {
			return ""
		}
		served = append(served, fmt.Sprintf("container %s serves %s", c.Name, strings.Join(sockets, ", ")))
	}
	if len(served) == 0 {
		return fmt.Sprintf("no container but sidecars mounts volume %s of its --csi-address %s: %s", vol, address, still)
	}
	return fmt.Sprintf("its --csi-address %s is not where the driver listens (%s): %s", address, strings.Join(served, "; "), still)
}

// mountPathOf is where c mounts the volume vol.
func mountPathOf(c *corev1.Container, vol string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == vol {
			return filepath.Clean(m.MountPath)
		}
	}
	return ""
}

// socketsOf are the unix socket paths a driver container's args and env
// name (unix://PATH, or a path ending in .sock), expanded as the kubelet
// expands them.
func socketsOf(c *corev1.Container) []string {
	env := envOf(c, "")
	words := expandArgs(c.Args, env)
	words = append(words, expandArgs(c.Command, env)...)
	for _, name := range slices.Sorted(maps.Keys(env)) { // in one order: the paths go into messages
		words = append(words, env[name])
	}
	var out []string
	for _, w := range words {
		if _, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "-") {
			w = v
		}
		p, isURL := strings.CutPrefix(w, "unix://")
		if (isURL || strings.HasSuffix(w, ".sock")) && filepath.IsAbs(p) && !slices.Contains(out, filepath.Clean(p)) {
			out = append(out, filepath.Clean(p))
		}
	}
	slices.Sort(out)
	return out
}

// registrarFlags parses the args of a node-driver-registrar container.
func registrarFlags(reg *corev1.Container, namespace string) *Sidecar {
	sc := &Sidecar{Image: "csi-node-driver-registrar", Container: reg.Name, Args: expandArgs(reg.Args, envOf(reg, namespace))}
	sc.values, sc.set, sc.Err = parseFlags(sc.Image, sc.Args)
	return sc
}

// Unregistered says why the kubelet of a node never registers the driver
// of a node plugin pod with this spec ("" if it does, or the pod runs no
// registrar): its registrar exits at start, never reaches the driver, or
// hands the kubelet a path where the driver is not. The node plugin's pods
// are judged each by its own spec, so that an edit of the DaemonSet's
// registrar takes effect as its pods are replaced.
func Unregistered(spec *corev1.PodSpec, namespace string) string {
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if sidecarOf(c.Image) != "csi-node-driver-registrar" {
			continue
		}
		flags := registrarFlags(c, namespace)
		if flags.Err == nil {
			flags.Unconnected = unconnected(spec, c, flags.Value("csi-address"))
		}
		if flags.Unconnected != "" {
			return flags.Unconnected
		}
		return registrationProblem(spec, flags, c)
	}
	return ""
}

// registrationProblem says why the kubelet cannot reach the driver the
// registrar registers ("" if it can): the --kubelet-registration-path the
// registrar hands the kubelet must be the host path of the socket its
// --csi-address names, through the hostPath volume they share
// (node-driver-registrar README; the kubelet dials that path in its
// RegisterPlugin and NodeGetInfo, pkg/volume/csi/csi_plugin.go).
func registrationProblem(spec *corev1.PodSpec, reg *Sidecar, regContainer *corev1.Container) string {
	if reg.Err != nil {
		return reg.Down()
	}
	path := reg.Value("kubelet-registration-path")
	if path == "" {
		// cmd/csi-node-driver-registrar/main.go
		return "kubelet-registration-path is a required parameter: the registrar exits at start and its container goes to CrashLoopBackOff"
	}
	address := strings.TrimPrefix(reg.Value("csi-address"), "unix://")
	vol := volumeAt(regContainer, address)
	var hostDir string
	for _, v := range spec.Volumes {
		if v.Name == vol && v.HostPath != nil {
			hostDir = filepath.Clean(v.HostPath.Path)
		}
	}
	const failed = "the kubelet cannot reach the driver there, its registration fails and the registrar logs " +
		"\"Registration process failed with error, restarting registration container\" and exits"
	if hostDir == "" {
		return fmt.Sprintf("volume %s of its --csi-address is no hostPath, so no path of the node holds the driver's socket: %s", vol, failed)
	}
	want := filepath.Join(hostDir, filepath.Base(address))
	if filepath.Clean(path) != want {
		return fmt.Sprintf("--kubelet-registration-path=%s is not the driver's socket on the node, %s (hostPath %s of volume %s): %s",
			path, want, hostDir, vol, failed)
	}
	return ""
}
