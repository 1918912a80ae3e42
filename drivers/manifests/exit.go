package manifests

// How a sidecar container's real binary ends when its args stop it at
// start: its exit status and what it writes to stderr, which the kubelet
// keeps as the container's log and shows with `kubectl logs`.

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Exit is how a container's process ends soon after it starts.
type Exit struct {
	// Code is the exit status; After how long after its start it exits.
	Code  int32
	After time.Duration
	// Stderr are the lines it writes to stderr before it exits.
	Stderr []Line
}

// Line is a line a process writes, After its start.
type Line struct {
	After time.Duration
	Text  string
}

// connectTimeout is how long csi-lib-utils' connection.Connect tries to
// reach the driver before it gives up (its default WithTimeout), and
// connectLogEvery how often it logs "Still connecting" meanwhile
// (connectionLoggingInterval), csi-lib-utils connection/connection.go.
const (
	connectTimeout  = 30 * time.Second
	connectLogEvery = 10 * time.Second
)

// ContainerExit is how the binary of sidecar container c of a pod with
// spec ends once started (at start, for the time its log lines carry), or
// nil if it runs: not a known sidecar, or its flags let it run. A flag
// the binary refuses ends it at once with status 2 (Go's flag package and
// pflag exit 2 on a parse error, flag.CommandLine and pflag.CommandLine
// being ExitOnError); a node-driver-registrar without
// --kubelet-registration-path logs an error and exits 1
// (node-driver-registrar v2.17.0 cmd/csi-node-driver-registrar/main.go),
// and one whose registration path the kubelet cannot reach exits 1 a
// second later (registrationFailedExit);
// an external-provisioner or external-attacher whose --csi-address no
// driver beside it serves gives up connecting after 30s and exits 1
// (unconnectedExit).
func ContainerExit(spec *corev1.PodSpec, c *corev1.Container, namespace string, start time.Time) *Exit {
	image := sidecarOf(c.Image)
	if image == "" {
		return nil
	}
	args := expandArgs(c.Args, envOf(c, namespace))
	values, _, err := parseFlags(image, args)
	switch {
	case err != nil:
		return &Exit{Code: 2, Stderr: atStart(usageError(image, err))}
	case image == "csi-node-driver-registrar" && values["kubelet-registration-path"] == "":
		return &Exit{Code: 1, Stderr: atStart([]string{klogLine('E', start, "main.go:135", `"kubelet-registration-path is a required parameter"`)})}
	case image == "csi-provisioner" || image == "csi-attacher":
		if unconnected(spec, c, values["csi-address"]) != "" {
			return unconnectedExit(image, values["csi-address"], start)
		}
	case image == "csi-node-driver-registrar":
		reg := registrarFlags(c, namespace)
		if unconnected(spec, c, reg.Value("csi-address")) == "" && registrationProblem(spec, reg, c) != "" {
			return registrationFailedExit(reg.Value("kubelet-registration-path"), start)
		}
	}
	return nil
}

// registrationFailedAfter is how long after its start a registrar whose
// registration fails exits: the kubelet's plugin watcher sees its
// registration socket and its reconciler, which runs every second,
// registers the plugin (kubernetes pkg/kubelet/pluginmanager
// reconciler.go).
const registrationFailedAfter = time.Second

// registrationFailedExit is how a node-driver-registrar ends when the
// kubelet cannot reach the driver at its --kubelet-registration-path: the
// kubelet's NodeGetInfo there fails (no socket: the gRPC dial's "no such
// file or directory", pkg/volume/csi/csi_plugin.go RegisterPlugin), it
// tells the registrar so (pkg/kubelet/pluginmanager/operationexecutor
// operation_generator.go, "RegisterPlugin error -- plugin registration
// failed with err: ..."), and the registrar logs it and exits 1
// (node-driver-registrar v2.17.0 cmd/csi-node-driver-registrar/main.go
// NotifyRegistrationStatus). csisim leaves out the lines it logs before.
func registrationFailedExit(path string, start time.Time) *Exit {
	err := "RegisterPlugin error -- plugin registration failed with err: rpc error: code = Unavailable desc = connection error: " +
		fmt.Sprintf("desc = %q", fmt.Sprintf("transport: Error while dialing: dial unix %s: connect: no such file or directory", path))
	line := klogLine('E', start.Add(registrationFailedAfter), "main.go:104",
		fmt.Sprintf("%q err=%q", "Registration process failed with error, restarting registration container", err))
	return &Exit{Code: 1, After: registrationFailedAfter, Stderr: []Line{{After: registrationFailedAfter, Text: line}}}
}

// atStart are lines written the moment the process starts.
func atStart(texts []string) []Line {
	out := make([]Line, len(texts))
	for i, t := range texts {
		out[i] = Line{Text: t}
	}
	return out
}

// unconnectedExit is how an external-provisioner or external-attacher
// ends when no socket is at its --csi-address: connection.Connect logs
// "Still connecting" every 10s and gives up after 30s with the blocking
// gRPC dial's "context deadline exceeded", which the provisioner logs with
// klog.Error (external-provisioner v6.4.0 cmd/csi-provisioner/csi-provisioner.go)
// and the attacher as "Failed to connect to the CSI driver"
// (external-attacher v4.13.0 cmd/csi-attacher/main.go); both exit 1.
// csisim leaves out the lines each logs before it connects (its version,
// its settings).
func unconnectedExit(image, address string, start time.Time) *Exit {
	normalized := address
	if strings.HasPrefix(address, "/") {
		normalized = "unix://" + address // connection.go names a path so
	}
	var lines []Line
	for at := connectLogEvery; at < connectTimeout; at += connectLogEvery {
		lines = append(lines, Line{After: at, Text: klogLine('I', start.Add(at), "connection.go:253",
			fmt.Sprintf("%q address=%q", "Still connecting", normalized))})
	}
	last := klogLine('E', start.Add(connectTimeout), "csi-provisioner.go:231", "context deadline exceeded")
	if image == "csi-attacher" {
		last = klogLine('E', start.Add(connectTimeout), "main.go:153",
			fmt.Sprintf("%q err=%q csiAddress=%q", "Failed to connect to the CSI driver", "context deadline exceeded", address))
	}
	return &Exit{Code: 1, After: connectTimeout, Stderr: append(lines, Line{After: connectTimeout, Text: last})}
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
// ID, file:line, then the message (quoted, with its key=value pairs, for a
// structured call).
func klogLine(severity byte, now time.Time, at, msg string) string {
	return fmt.Sprintf("%c%s %7d %s] %s", severity, now.UTC().Format("0102 15:04:05.000000"), 1, at, msg)
}
