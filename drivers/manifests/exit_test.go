package manifests

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A sidecar container's binary exits at start with its flag package's
// words, in its order, and its status.
func TestContainerExit(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 54, 8, 123456000, time.UTC)
	for _, tc := range []struct {
		name  string
		c     corev1.Container
		code  int32
		after time.Duration
		lines []string // nil: it runs
	}{
		{name: "Go flag: the error, then the usage", c: corev1.Container{Image: "registry.k8s.io/sig-storage/csi-attacher:v4.13.0",
			Args: []string{"--csi-address=/csi/csi.sock", "--leader-elect"}}, code: 2,
			lines: []string{"flag provided but not defined: -leader-elect", "Usage of /csi-attacher:"}},
		{name: "pflag: the usage, then the error", c: corev1.Container{Image: "registry.k8s.io/sig-storage/csi-provisioner:v6.4.0",
			Args: []string{"--leader-elect"}}, code: 2,
			lines: []string{"Usage of /csi-provisioner:", "unknown flag: --leader-elect"}},
		{name: "registrar without its registration path", c: corev1.Container{Image: "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
			Args: []string{"--csi-address=/csi/csi.sock"}}, code: 1,
			lines: []string{`E1207 10:54:08.123456       1 main.go:135] "kubelet-registration-path is a required parameter"`}},
		{name: "flags it knows", c: corev1.Container{Image: "registry.k8s.io/sig-storage/csi-attacher:v4.13.0",
			Args: []string{"--csi-address=/csi/csi.sock", "--leader-election"}, VolumeMounts: []corev1.VolumeMount{{Name: "socket-dir", MountPath: "/csi"}}}},
		{name: "no sidecar", c: corev1.Container{Image: "busybox", Args: []string{"--anything"}}},
		{name: "registrar handing the kubelet a path where no driver is", c: corev1.Container{
			Image:        "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
			Args:         []string{"--csi-address=/csi/csi.sock", "--kubelet-registration-path=/var/lib/kubelet/plugins/other/csi.sock"},
			VolumeMounts: []corev1.VolumeMount{{Name: "socket-dir", MountPath: "/csi"}}}, code: 1, after: time.Second, lines: []string{
			`E1207 10:54:09.123456       1 main.go:104] "Registration process failed with error, restarting registration container" ` +
				`err="RegisterPlugin error -- plugin registration failed with err: rpc error: code = Unavailable desc = connection error: ` +
				`desc = \"transport: Error while dialing: dial unix /var/lib/kubelet/plugins/other/csi.sock: connect: no such file or directory\""`}},
		{name: "registrar handing the kubelet the driver's socket", c: corev1.Container{
			Image:        "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0",
			Args:         []string{"--csi-address=/csi/csi.sock", "--kubelet-registration-path=/var/lib/kubelet/plugins/driver/csi.sock"},
			VolumeMounts: []corev1.VolumeMount{{Name: "socket-dir", MountPath: "/csi"}}}},
		{name: "provisioner beside no driver", c: corev1.Container{Image: "registry.k8s.io/sig-storage/csi-provisioner:v6.4.0",
			Args: []string{"--csi-address=/run/csi.sock"}, VolumeMounts: []corev1.VolumeMount{{Name: "run", MountPath: "/run"}}},
			code: 1, after: 30 * time.Second, lines: []string{
				`I1207 10:54:18.123456       1 connection.go:253] "Still connecting" address="unix:///run/csi.sock"`,
				`I1207 10:54:28.123456       1 connection.go:253] "Still connecting" address="unix:///run/csi.sock"`,
				`E1207 10:54:38.123456       1 csi-provisioner.go:231] context deadline exceeded`}},
		{name: "attacher beside no driver", c: corev1.Container{Image: "registry.k8s.io/sig-storage/csi-attacher:v4.13.0",
			Args: []string{"--csi-address=/run/csi.sock"}, VolumeMounts: []corev1.VolumeMount{{Name: "run", MountPath: "/run"}}},
			code: 1, after: 30 * time.Second, lines: []string{
				`I1207 10:54:18.123456       1 connection.go:253] "Still connecting" address="unix:///run/csi.sock"`,
				`I1207 10:54:28.123456       1 connection.go:253] "Still connecting" address="unix:///run/csi.sock"`,
				`E1207 10:54:38.123456       1 main.go:153] "Failed to connect to the CSI driver" err="context deadline exceeded" csiAddress="/run/csi.sock"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The driver's container serves its socket on volume
			// socket-dir: a sidecar on another reaches no driver.
			spec := &corev1.PodSpec{Containers: []corev1.Container{tc.c, {Name: "driver", Image: "example.com/driver:v1",
				VolumeMounts: []corev1.VolumeMount{{Name: "socket-dir", MountPath: "/csi"}}}},
				Volumes: []corev1.Volume{{Name: "socket-dir", VolumeSource: corev1.VolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet/plugins/driver"}}}}}
			exit := ContainerExit(spec, &spec.Containers[0], "default", now)
			if tc.lines == nil {
				if exit != nil {
					t.Fatalf("exit %+v, want none", exit)
				}
				return
			}
			var lines []string
			for _, l := range exit.Stderr {
				lines = append(lines, l.Text)
			}
			if exit.Code != tc.code || exit.After != tc.after || !slices.Equal(lines, tc.lines) {
				t.Fatalf("exit %+v, want code %d after %s, lines %q", exit, tc.code, tc.after, tc.lines)
			}
		})
	}
}
