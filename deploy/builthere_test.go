package deploy

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestBuiltHereVariant: the built-here variant is the controller
// Deployment and the node DaemonSet, each in a file named as the regular
// one, identical but for the annotation that names the variant and the
// containers csisim stands in for: livenessprobe becomes csisim
// livenessprobe with the same flags, node-driver-registrar csisim registrar
// registering the driver under its name at the socket path the kubelet
// dials, in the registration directory it mounts.
func TestBuiltHereVariant(t *testing.T) {
	variant := load(t, builtHerePattern)
	var files []string
	for _, m := range variant {
		files = append(files, filepath.Base(m.file))
	}
	slices.Sort(files)
	if want := []string{"30-controller.yaml", NodeManifest}; !slices.Equal(files, want) {
		t.Fatalf("variant files %v, want %v (the regular files they replace)", files, want)
	}
	base := load(t, basePattern)

	d := one[*appsv1.Deployment](t, variant).DeepCopy()
	checkBuiltHere(t, "Deployment", &d.Spec.Template, &one[*appsv1.Deployment](t, base).Spec.Template)
	if diff := cmp.Diff(one[*appsv1.Deployment](t, base), d); diff != "" {
		t.Errorf("the variant's Deployment differs from the regular one in more than its stand-ins (-regular +variant):\n%s", diff)
	}
	ds := one[*appsv1.DaemonSet](t, variant).DeepCopy()
	checkBuiltHere(t, "DaemonSet", &ds.Spec.Template, &one[*appsv1.DaemonSet](t, base).Spec.Template)
	if diff := cmp.Diff(one[*appsv1.DaemonSet](t, base), ds); diff != "" {
		t.Errorf("the variant's DaemonSet differs from the regular one in more than its stand-ins (-regular +variant):\n%s", diff)
	}
}

// checkBuiltHere checks the variant's pod template v against the regular
// one's, r, and then makes v like r where they may differ, for a
// comparison of the rest.
func checkBuiltHere(t *testing.T, what string, v, r *corev1.PodTemplateSpec) {
	t.Helper()
	if got := v.Annotations[VariantAnnotation]; got != "built-here" {
		t.Errorf("%s: pod template annotation %s=%q, want built-here", what, VariantAnnotation, got)
	}
	delete(v.Annotations, VariantAnnotation)
	if len(v.Annotations) == 0 {
		v.Annotations = nil
	}
	for i := range v.Spec.Containers {
		c := &v.Spec.Containers[i]
		regular := container(&r.Spec, c.Name)
		if regular == nil {
			continue // the comparison reports it
		}
		switch c.Name {
		case "livenessprobe":
			standIn(t, what, c, "livenessprobe")
			if !slices.Equal(c.Args, regular.Args) {
				t.Errorf("%s: csisim livenessprobe args %q, want the sidecar's %q", what, c.Args, regular.Args)
			}
		case "node-driver-registrar":
			standIn(t, what, c, "registrar")
			path, _ := flagValue(regular, "kubelet-registration-path")
			want := []string{"--driver-name=" + DriverName, "--csi-address=" + path,
				"--kubelet-registration-dir=" + mountPath(c, "registration-dir")}
			if !slices.Equal(c.Args, want) {
				t.Errorf("%s: csisim registrar args %q, want %q", what, c.Args, want)
			}
		default:
			continue
		}
		*c = *regular.DeepCopy()
	}
}

// standIn checks that c runs `csisim SUBCOMMAND` from the driver image.
func standIn(t *testing.T, what string, c *corev1.Container, subcommand string) {
	t.Helper()
	if c.Image != Image || c.ImagePullPolicy != corev1.PullIfNotPresent || !slices.Equal(c.Command, []string{"/usr/local/bin/csisim", subcommand}) {
		t.Errorf("%s: %s runs %v from %s (pull %s), want /usr/local/bin/csisim %s from %s (IfNotPresent)", what, c.Name, c.Command, c.Image, c.ImagePullPolicy, subcommand, Image)
	}
}

func mountPath(c *corev1.Container, volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath
		}
	}
	return ""
}
