package manifests

// How a sidecar container's real binary ends when its args stop it at
// start: its exit status and what it writes to stderr, which the kubelet
// keeps as the container's log and shows with `kubectl logs`.

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Exit is how a container's process ends at start.
type Exit struct {
	// Code is the exit status.
	Code int32
	// Stderr are the lines it writes to stderr before it exits.
	Stderr []string
}

// ContainerExit is how the binary of a sidecar container with these args
// ends at start (now, for the time its log lines carry), or nil if it
// does not: not a known sidecar, or its flags let it run. A flag the
// binary refuses ends it with status 2 (Go's flag package and pflag exit
// 2 on a parse error, flag.CommandLine and pflag.CommandLine being
// ExitOnError); a node-driver-registrar without
// --kubelet-registration-path logs an error and exits 1
// (node-driver-registrar v2.17.0 cmd/csi-node-driver-registrar/main.go).
func ContainerExit(c *corev1.Container, namespace string, now time.Time) *Exit {
	image := sidecarOf(c.Image)
	if image == "" {
		return nil
	}
	args := expandArgs(c.Args, envOf(c, namespace))
	values, _, err := parseFlags(image, args)
	switch {
	case err != nil:
		return &Exit{Code: 2, Stderr: usageError(image, err)}
	case image == "csi-node-driver-registrar" && values["kubelet-registration-path"] == "":
		return &Exit{Code: 1, Stderr: []string{klogLine('E', now, "main.go:135", "kubelet-registration-path is a required parameter")}}
	}
	return nil
}

// usageError is what the sidecar's flag package writes when it refuses
// the args: Go's flag package prints the error, then "Usage of
// <program>:" and the flags (flag.go failf, then the default Usage);
// pflag (the external-provisioner's) prints the usage first and the error
// last (pflag v1.0.10 flag.go fail, then Parse with ExitOnError). The
// program is the image's entrypoint, /<binary> in each sidecar's
// Dockerfile. csisim leaves out the list of flags the real usage prints
// between: their help texts are the binaries' own.
func usageError(image string, err error) []string {
	usage := fmt.Sprintf("Usage of /%s:", image)
	if sidecarFlags[image].pflag {
		return []string{usage, err.Error()}
	}
	return []string{err.Error(), usage}
}

// klogLine is a line as klog's text format writes it from a container's
// first process (pid 1): severity, date and time in microseconds, thread
// ID, file:line, then the quoted message of a structured log call.
func klogLine(severity byte, now time.Time, at, msg string) string {
	return fmt.Sprintf("%c%s %7d %s] %q", severity, now.UTC().Format("0102 15:04:05.000000"), 1, at, msg)
}
