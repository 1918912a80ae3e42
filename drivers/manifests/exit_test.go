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
			Args: []string{"--csi-address=/csi/csi.sock", "--leader-election"}}},
		{name: "no sidecar", c: corev1.Container{Image: "busybox", Args: []string{"--anything"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exit := ContainerExit(&tc.c, "default", now)
			if tc.lines == nil {
				if exit != nil {
					t.Fatalf("exit %+v, want none", exit)
				}
				return
			}
			if exit == nil || exit.Code != tc.code || !slices.Equal(exit.Stderr, tc.lines) {
				t.Fatalf("exit %+v, want code %d, lines %q", exit, tc.code, tc.lines)
			}
		})
	}
}
