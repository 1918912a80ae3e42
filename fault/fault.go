// Package fault is csisim's one fault model: what can go wrong during a
// run, as plain values. The scenario parser builds them, and every backend —
// the simulator, the real control plane, a real cluster — either injects a
// fault or refuses it by name before the run starts (Injector.CanInject).
// It is a leaf: it imports no other package of csisim, so that the parser
// and the backends can share it without importing each other.
package fault

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"google.golang.org/grpc/codes"
)

// Kind names a fault as a scenario step does.
type Kind string

// The faults, by the step that injects them.
const (
	// NodeLoss stops the node's kubelet and CSI node plugin; its mounts
	// and attachments stay, its Lease is no longer renewed.
	NodeLoss Kind = "node-loss"
	// NodeReturn starts them again.
	NodeReturn Kind = "node-return"
	// OutOfService puts the node.kubernetes.io/out-of-service taint on
	// the node, as an administrator marks a node shut down for good.
	OutOfService Kind = "out-of-service"
	// MissingMountPropagation restarts the node's CSI plugin in a mount
	// namespace of its own with private propagation, as a DaemonSet
	// without mountPropagation: Bidirectional runs it: its mounts succeed
	// where the kubelet cannot see them.
	MissingMountPropagation Kind = "missing-mount-propagation"
	// KubeletRestart restarts the node's kubelet: its process state is
	// dropped and the new one rebuilds it from the volumes it finds
	// mounted under its directory.
	KubeletRestart Kind = "kubelet-restart"
	// StaleVolumeAttachment creates, out of band, the VolumeAttachment the
	// attach/detach controller would make for a claim's volume on a node,
	// as one left behind by a controller that has lost track of it.
	StaleVolumeAttachment Kind = "stale-volumeattachment"
	// ControllerManagerRestart restarts kube-controller-manager: the
	// attach/detach controller forgets what it knew and rebuilds its
	// actual state from the Nodes and VolumeAttachments it finds.
	ControllerManagerRestart Kind = "controller-manager-restart"

	// CSIError answers matching CSI calls with a gRPC error, as if the
	// driver had.
	CSIError Kind = "csi-error"
	// CSIDelay holds matching CSI calls for a while before the driver sees
	// them; a caller whose deadline passes first gets DeadlineExceeded.
	CSIDelay Kind = "csi-delay"
	// CSIHang never answers matching CSI calls: the caller's own timeout
	// ends them with DeadlineExceeded.
	CSIHang Kind = "csi-hang"
	// CSILostAnswer lets matching CSI calls reach the driver and complete
	// there, then loses the answer: the caller hears nothing until its own
	// timeout ends the call with DeadlineExceeded, as when a reply is lost
	// on the way or the caller's deadline passes just as the driver
	// finishes. The driver did the work; the caller must retry to learn so.
	CSILostAnswer Kind = "csi-lost-answer"
	// CSIHeal removes the CSI faults that match (all of them when CSI.Method
	// is empty).
	CSIHeal Kind = "csi-heal"

	// DriverCrash kills a driver plugin process; its socket goes with it.
	DriverCrash Kind = "driver-crash"
	// DriverCrashMidCall lets matching CSI calls reach the driver and
	// complete there, then kills the driver before its answer reaches the
	// caller, who gets Unavailable (the connection lost); the driver is
	// started again with its state, as a crashed container is, and later
	// calls are answered. The work is done; the caller must retry to learn
	// so.
	DriverCrashMidCall Kind = "driver-crash-mid-call"
	// DriverRestart starts a crashed (or running) plugin again, with its
	// state directory or without it (LoseState).
	DriverRestart Kind = "driver-restart"
	// NodePluginMissing keeps the node's CSI plugin from registering with
	// its kubelet, as a DaemonSet that does not tolerate the node's taint:
	// no socket, no CSINode entry, pods there cannot mount.
	NodePluginMissing Kind = "node-plugin-missing"
	// NodeVolumeLimit changes how many volumes a node can take in the
	// driver's storage backend, as a cloud does when other devices take an
	// instance's attach slots: the node plugin's NodeGetInfo reports Limit
	// from then on, and ControllerPublishVolume refuses a volume over it
	// with ResourceExhausted. The kubelet rewrites the CSINode's
	// allocatable count where the CSIDriver asks it to
	// (nodeAllocatableUpdatePeriodSeconds, KEP-4876).
	NodeVolumeLimit Kind = "node-volume-limit"
	// VolumeHealth changes what the driver's storage backend knows is
	// wrong with a claim's volume, as an array that loses a disk or a
	// replica: the driver's health calls (ControllerGetVolumeHealth,
	// ControllerListVolumeHealth, NodeGetVolumeHealth of CSI v1.13) report
	// Health from then on, or nothing when Health.Status is Healthy. The
	// data stays readable: only what the driver reports changes.
	VolumeHealth Kind = "volume-health"

	// SidecarRestart restarts a CSI sidecar (or the snapshot-controller)
	// as a container restart does: it loses what it kept in memory — claims
	// in progress, caches, backoffs, its workqueue — and starts again,
	// listing everything anew. Component names it (Sidecars).
	SidecarRestart Kind = "sidecar-restart"

	// MountBusy keeps a pod's mount of one of its volumes busy for a while,
	// as a process on the node whose working directory or open file is
	// inside it does (a shell left in the directory, a backup agent, a
	// log shipper): an open directory inside the path where the container
	// sees the volume — its subPath bind mount when the container mounts
	// the volume with a subPath, else the volume's publish target. An
	// unmount of it fails with EBUSY ("target is busy") until the holder
	// goes, MountBusy.For later.
	MountBusy Kind = "mount-busy"

	// APIConflict answers the component's next writes with 409 Conflict.
	APIConflict Kind = "api-conflict"
	// WatchDrop makes the component's informers of one resource miss
	// events until they list again.
	WatchDrop Kind = "watch-drop"
	// APIServerDown stops the API server for API.Duration, as a stopped
	// kube-apiserver: every component's requests are refused (connection
	// refused) and its watches end; when it returns, the reflectors, which
	// have kept trying with their backoff, list again.
	APIServerDown Kind = "api-server-down"
	// APISlowWrites makes the API server take API.Latency longer to answer
	// each write (create, update, patch, delete), for API.Duration, as an
	// overloaded etcd does.
	APISlowWrites Kind = "api-slow-writes"
	// APIThrottle answers requests with 429 TooManyRequests and a
	// Retry-After of API.RetryAfter, as kube-apiserver's priority and
	// fairness does when a priority level's queues are full: the next
	// Times requests, or every request for API.Duration.
	APIThrottle Kind = "api-throttle"
)

// Kinds lists every fault, in the order documentation and messages list
// them.
var Kinds = []Kind{NodeLoss, NodeReturn, OutOfService, MissingMountPropagation, KubeletRestart,
	StaleVolumeAttachment, ControllerManagerRestart,
	CSIError, CSIDelay, CSIHang, CSILostAnswer, CSIHeal,
	DriverCrash, DriverCrashMidCall, DriverRestart, NodePluginMissing, NodeVolumeLimit, VolumeHealth,
	SidecarRestart, MountBusy,
	APIConflict, WatchDrop, APIServerDown, APISlowWrites, APIThrottle}

// Sidecars are the components sidecar-restart restarts, by the user agent
// they write as.
var Sidecars = []string{"external-provisioner", "external-attacher", "external-resizer", "csi-snapshotter", "snapshot-controller"}

// Known reports whether k is a fault csisim knows.
func Known(k Kind) bool { return slices.Contains(Kinds, k) }

// Plugin is which driver plugin a driver fault acts on.
type Plugin string

const (
	// Controller is the controller plugin, which the external-provisioner
	// and external-attacher call.
	Controller Plugin = "controller"
	// Node is a node plugin, which that node's kubelet calls.
	Node Plugin = "node"
)

// Fault is one thing that goes wrong. Kind says what; the other fields are
// its parameters, each used by the kinds its comment names.
type Fault struct {
	Kind Kind
	// Node is the node a node fault happens to. For CSI and driver faults
	// it limits them to that node's plugin; empty means every plugin the
	// fault can apply to.
	Node string
	// Claim and Namespace name the claim of a stale-volumeattachment and
	// of volume-health; Namespace is also mount-busy's pod's. It defaults
	// to "default".
	Claim     string
	Namespace string
	// CSI is what csi-error, csi-delay, csi-hang, csi-lost-answer,
	// driver-crash-mid-call and csi-heal match and do.
	CSI CSI
	// Plugin is the plugin of driver-crash and driver-restart (and of
	// CSI faults: empty for every plugin).
	Plugin Plugin
	// Driver is the CSI driver a CSI or driver fault (or sidecar-restart)
	// hits, by the name it registers under, in a cluster of several
	// drivers; empty: the cluster's first driver, the one under test.
	Driver string
	// Limit is the node's new volume limit of node-volume-limit; 0 means
	// unlimited.
	Limit int64
	// Health is the condition volume-health gives the claim's volume.
	Health Health
	// LoseState makes driver-restart start the plugin with an empty state
	// directory, as a driver whose state lived in its container.
	LoseState bool
	// Component is whose API traffic api-conflict and watch-drop disturb
	// (and api-slow-writes and api-throttle, where empty means every
	// component's), or the sidecar sidecar-restart restarts: its user
	// agent, e.g. external-provisioner or attachdetach-controller.
	Component string
	// Resource is the resource watch-drop drops events of, as a plural
	// lower-case name: pods, persistentvolumeclaims, volumeattachments...
	Resource string
	// Times is how often the fault strikes: the writes api-conflict
	// refuses, the events watch-drop drops, the calls a CSI fault fires
	// on, the requests api-throttle answers 429. For CSI faults 0 means
	// always, until csi-heal; for api-throttle, API.Duration rules then.
	Times int
	// API is what api-server-down, api-slow-writes and api-throttle do.
	API API
	// Busy is what mount-busy holds and for how long.
	Busy Busy
}

// Busy names the pod (Fault.Namespace, "default" if empty) and the volume
// whose mount mount-busy holds, and for how long.
type Busy struct {
	// Pod is the pod's name.
	Pod string
	// Volume is the pod volume's name, as spec.volumes names it.
	Volume string
	// For is how long the mount stays busy.
	For time.Duration
}

// Healthy is the Health.Status of a volume-health that clears what an
// earlier one set.
const Healthy = "Healthy"

// HealthStatuses are the adverse Health.Status values: CSI v1.13's
// VolumeHealthErrorType names.
var HealthStatuses = []string{"DEGRADED", "INACCESSIBLE", "DATA_LOSS"}

// Health is what volume-health makes the backend report for a volume:
// Status (one of HealthStatuses, or Healthy), a CamelCase Reason (none
// with Healthy) and a Message for people.
type Health struct {
	Status  string
	Reason  string
	Message string
}

// API says how long an API server fault lasts and what it does.
type API struct {
	// Duration is how long api-server-down and api-slow-writes last, and
	// api-throttle when Times is 0.
	Duration time.Duration
	// Latency is what api-slow-writes adds to each write.
	Latency time.Duration
	// RetryAfter is the Retry-After api-throttle's 429s carry, in whole
	// seconds.
	RetryAfter time.Duration
}

// CSI selects CSI calls and says what a CSI fault does to them.
type CSI struct {
	// Method is the CSI method's short name ("NodeStageVolume"), or a
	// path.Match pattern over short names ("Node*", "*").
	Method string
	// Volume, if set, limits the fault to calls on that volume ID (for
	// CreateVolume: the requested name).
	Volume string
	// Code and Message are csi-error's answer; an empty Message says the
	// fault injected it.
	Code    codes.Code
	Message string
	// Delay is how long csi-delay holds a call; for csi-hang, the longest
	// it hangs (0: until the caller gives up).
	Delay time.Duration
	// FirstAttempt limits csi-lost-answer and driver-crash-mid-call to
	// the first matching call of each volume: the caller's retry gets its
	// answer.
	FirstAttempt bool
}

// Describe names the fault and what it happens to, for step names,
// timelines and reports.
func (f Fault) Describe() string {
	parts := []string{string(f.Kind)}
	switch f.Kind {
	case CSIError, CSIDelay, CSIHang, CSILostAnswer, DriverCrashMidCall, CSIHeal:
		if f.CSI.Method != "" {
			parts = append(parts, f.CSI.Method)
		}
		if f.CSI.Volume != "" {
			parts = append(parts, "volume "+f.CSI.Volume)
		}
		if f.Kind == CSIError {
			parts = append(parts, f.CSI.Code.String())
		}
		if f.Kind == CSIDelay {
			parts = append(parts, f.CSI.Delay.String())
		}
		if f.CSI.FirstAttempt {
			parts = append(parts, "first attempt per volume")
		}
	case DriverCrash, DriverRestart:
		if f.Plugin != "" {
			parts = append(parts, string(f.Plugin))
		}
		if f.Kind == DriverRestart && f.LoseState {
			parts = append(parts, "without state")
		}
	case NodeVolumeLimit:
		parts = append(parts, fmt.Sprintf("%d", f.Limit))
	case VolumeHealth:
		parts = append(parts, f.Health.Status)
		if f.Health.Reason != "" {
			parts = append(parts, f.Health.Reason)
		}
	case APIConflict, WatchDrop, SidecarRestart:
		parts = append(parts, f.Component)
		if f.Resource != "" {
			parts = append(parts, f.Resource)
		}
	case APIServerDown, APISlowWrites, APIThrottle:
		parts = append(parts, f.describeAPI()...)
	case MountBusy:
		parts = append(parts, "volume "+f.Busy.Volume, "of pod "+f.Busy.Pod, "for "+f.Busy.For.String())
	}
	if f.Driver != "" {
		parts = append(parts, "of driver "+f.Driver)
	}
	switch {
	case f.Kind == VolumeHealth:
		parts = append(parts, "of claim "+f.Claim)
	case f.Claim != "":
		parts = append(parts, f.Claim, "on", f.Node)
	case f.Node != "":
		parts = append(parts, "on "+f.Node)
	}
	return strings.Join(parts, " ")
}

// describeAPI is what an API server fault does, in words.
func (f Fault) describeAPI() []string {
	var parts []string
	switch f.Kind {
	case APISlowWrites:
		parts = append(parts, "+"+f.API.Latency.String()+" per write")
	case APIThrottle:
		parts = append(parts, "429 Retry-After "+f.API.RetryAfter.String())
		if f.Times > 0 {
			parts = append(parts, fmt.Sprintf("next %d requests", f.Times))
		}
	}
	if f.Component != "" {
		parts = append(parts, "of "+f.Component)
	}
	if f.API.Duration > 0 {
		parts = append(parts, "for "+f.API.Duration.String())
	}
	return parts
}

// Injector is a backend that can make faults happen.
type Injector interface {
	// CanInject returns nil if the backend can inject f, or an error
	// saying why it cannot; the runner asks for every fault step before
	// the run starts, so that a scenario is refused rather than failing
	// halfway.
	CanInject(f Fault) error
	// InjectFault makes f happen now.
	InjectFault(ctx context.Context, f Fault) error
}

// UnsupportedError says that a backend cannot inject a fault, and why.
type UnsupportedError struct {
	Kind    Kind
	Backend string
	Reason  string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s cannot be injected on %s: %s", e.Kind, e.Backend, e.Reason)
}

// Unsupported returns an *UnsupportedError.
func Unsupported(k Kind, backend, reason string) error {
	return &UnsupportedError{Kind: k, Backend: backend, Reason: reason}
}

// CheckAPIServerBounds refuses, for backend, an API server fault that does
// not say how far it goes: api-server-down and api-slow-writes need a
// duration (and a latency), api-throttle a number of requests or a
// duration. Any other fault passes.
func CheckAPIServerBounds(f Fault, backend string) error {
	switch {
	case f.Kind == APIServerDown && f.API.Duration <= 0:
		return Unsupported(f.Kind, backend, "it needs a duration above 0")
	case f.Kind == APISlowWrites && (f.API.Duration <= 0 || f.API.Latency <= 0):
		return Unsupported(f.Kind, backend, "it needs a latency and a duration above 0")
	case f.Kind == APIThrottle && f.Times <= 0 && f.API.Duration <= 0:
		return Unsupported(f.Kind, backend, "it needs times or a duration above 0")
	}
	return nil
}

// APIServerStory is what a timeline says of API server fault f, in the same
// words on every backend that injects it: the line as it begins and the one
// as it ends ("" for an api-throttle of a number of requests, which ends by
// itself). throttled is how many requests api-throttle refuses, -1 for all
// of them until it ends.
func APIServerStory(f Fault) (begins, ends string, throttled int) {
	who := "every component's"
	if f.Component != "" {
		who = f.Component + "'s"
	}
	switch f.Kind {
	case APIServerDown:
		return fmt.Sprintf("stopped for %s: every component's requests are refused (connection refused) and its watches end", f.API.Duration),
			"the API server is back; the reflectors list again after their backoff", 0
	case APISlowWrites:
		return fmt.Sprintf("%s writes take %s longer, for %s", who, f.API.Latency, f.API.Duration), "writes are answered at once again", 0
	case APIThrottle:
		if f.Times > 0 {
			return fmt.Sprintf("%s next %d requests get 429 TooManyRequests, Retry-After %s", who, f.Times, f.API.RetryAfter), "", f.Times
		}
		return fmt.Sprintf("%s requests for %s get 429 TooManyRequests, Retry-After %s", who, f.API.Duration, f.API.RetryAfter), "requests are served again", -1
	}
	return "", "", 0
}

// OutOfServiceTaint is the taint an administrator puts on a node shut down
// for good, as with
//
//	kubectl taint nodes NODE node.kubernetes.io/out-of-service=nodeshutdown:NoExecute
//
// added at the given time.
func OutOfServiceTaint(added time.Time) corev1.Taint {
	at := metav1.NewTime(added.Truncate(time.Second))
	return corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute, TimeAdded: &at}
}

// Components are the simulated components whose API traffic api-conflict
// and watch-drop disturb, by the user agent they write as. A node's kubelet
// is KubeletComponent(node).
var Components = []string{"persistentvolume-binder", "attachdetach-controller", "default-scheduler",
	"node-controller", "external-provisioner", "external-attacher", "expand-controller", "external-resizer",
	"snapshot-controller", "csi-snapshotter", "ephemeral-volume-controller", "statefulset-controller",
	"replicaset-controller", "deployment-controller", "daemonset-controller", "external-health-monitor"}

// kubeletPrefix starts a kubelet's user agent: kubelet:NODE.
const kubeletPrefix = "kubelet:"

// KubeletComponent is the user agent of node's kubelet.
func KubeletComponent(node string) string { return kubeletPrefix + node }

// KubeletNode returns the node of a kubelet's user agent, and whether
// component is one.
func KubeletNode(component string) (string, bool) {
	node, ok := strings.CutPrefix(component, kubeletPrefix)
	return node, ok && node != ""
}
