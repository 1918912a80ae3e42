// Package timing is the timing of a node's loss as the cluster's components
// take it: how often the node lifecycle controller looks at heartbeats and
// how long it waits before it marks a node Unknown and taints it, how long
// a pod tolerates the not-ready and unreachable taints by default, how long
// the attach/detach controller waits for a lost node to unmount before it
// detaches anyway, and how often a kubelet renews its heartbeats.
//
// The zero value is v1.37's defaults. `csisim diff --speedup N`
// (scenarios.Scenario.SpeedUp), or a scenario's cluster.timing: {speedup:
// N}, asks for them all divided by N, so that a node-loss story that takes
// a quarter of an hour on a real control plane is judged there in a few
// minutes: the simulator and the real components (through their flags,
// realkube) then run with the same values.
package timing

import (
	"fmt"
	"time"
)

// The defaults of v1.37, each from the component that owns it.
const (
	// DefaultNodeMonitorPeriod is kube-controller-manager
	// --node-monitor-period.
	DefaultNodeMonitorPeriod = 5 * time.Second
	// DefaultNodeMonitorGracePeriod is kube-controller-manager
	// --node-monitor-grace-period.
	DefaultNodeMonitorGracePeriod = 50 * time.Second
	// DefaultTolerationSeconds is kube-apiserver
	// --default-not-ready-toleration-seconds and
	// --default-unreachable-toleration-seconds, which the
	// DefaultTolerationSeconds admission plugin gives every pod.
	DefaultTolerationSeconds = 300
	// DefaultMaxWaitForUnmount is the attach/detach controller's
	// ReconcilerMaxWaitForUnmountDuration (DefaultTimerConfig in
	// pkg/controller/volume/attachdetach/attach_detach_controller.go): a
	// constant of kube-controller-manager, no flag.
	DefaultMaxWaitForUnmount = 6 * time.Minute
	// DefaultNodeStatusUpdateFrequency is how often a kubelet renews its
	// Lease and checks its node status (KubeletConfiguration
	// nodeStatusUpdateFrequency, and a quarter of the lease).
	DefaultNodeStatusUpdateFrequency = 10 * time.Second
	// DefaultNodeLeaseDurationSeconds is KubeletConfiguration
	// nodeLeaseDurationSeconds.
	DefaultNodeLeaseDurationSeconds = 40
	// DefaultNodeStatusReportFrequency is KubeletConfiguration
	// nodeStatusReportFrequency: an unchanged status is posted this often.
	DefaultNodeStatusReportFrequency = 5 * time.Minute
)

// MaxSpeedup bounds Speedup: beyond it the kubelet's lease (40 s) would
// last less than a second, and the scaled waits would drown in the
// latencies that cannot be scaled (an API round trip, a CSI call).
const MaxSpeedup = 20

// Timing is the cluster's timing of node loss. Its zero value is v1.37's.
type Timing struct {
	// Speedup divides every duration below by itself; 0 or 1: the
	// defaults.
	Speedup int
}

// Scaled says whether t differs from v1.37's defaults.
func (t Timing) Scaled() bool { return t.Speedup > 1 }

// Same says whether t and u are the same timing (a speedup of 1 is none).
func (t Timing) Same(u Timing) bool {
	return t.Scaled() == u.Scaled() && (!t.Scaled() || t.Speedup == u.Speedup)
}

// Validate says why t cannot be run.
func (t Timing) Validate() error {
	if t.Speedup < 0 || t.Speedup > MaxSpeedup {
		return fmt.Errorf("timing speedup %d: want 1 to %d", t.Speedup, MaxSpeedup)
	}
	return nil
}

func (t Timing) div(d time.Duration) time.Duration {
	if !t.Scaled() {
		return d
	}
	return d / time.Duration(t.Speedup)
}

func (t Timing) divSeconds(s int64) int64 {
	if !t.Scaled() {
		return s
	}
	return max(1, s/int64(t.Speedup))
}

// NodeMonitorPeriod is how often the node lifecycle controller looks at
// every node's heartbeats.
func (t Timing) NodeMonitorPeriod() time.Duration { return t.div(DefaultNodeMonitorPeriod) }

// NodeMonitorGracePeriod is how long a node may go without a heartbeat
// before the node lifecycle controller marks it Unknown.
func (t Timing) NodeMonitorGracePeriod() time.Duration { return t.div(DefaultNodeMonitorGracePeriod) }

// TolerationSeconds is how long a pod tolerates the not-ready and
// unreachable taints unless it says otherwise.
func (t Timing) TolerationSeconds() int64 { return t.divSeconds(DefaultTolerationSeconds) }

// MaxWaitForUnmount is how long the attach/detach controller waits for an
// unhealthy node to unmount a volume no pod wants before it detaches it
// anyway.
func (t Timing) MaxWaitForUnmount() time.Duration { return t.div(DefaultMaxWaitForUnmount) }

// NodeStatusUpdateFrequency is how often a kubelet renews its Lease and
// checks its node status.
func (t Timing) NodeStatusUpdateFrequency() time.Duration {
	return t.div(DefaultNodeStatusUpdateFrequency)
}

// NodeLeaseDurationSeconds is the duration a kubelet writes in its Lease.
func (t Timing) NodeLeaseDurationSeconds() int32 {
	return int32(t.divSeconds(DefaultNodeLeaseDurationSeconds))
}

// NodeStatusReportFrequency is how often a kubelet posts its node status
// when nothing changed.
func (t Timing) NodeStatusReportFrequency() time.Duration {
	return t.div(DefaultNodeStatusReportFrequency)
}

// KubeControllerManagerArgs are kube-controller-manager's flags for t;
// none for the defaults. The attach/detach controller's wait has no flag
// (MaxWaitForUnmountEnv).
func (t Timing) KubeControllerManagerArgs() []string {
	if !t.Scaled() {
		return nil
	}
	return []string{
		"--node-monitor-period=" + t.NodeMonitorPeriod().String(),
		"--node-monitor-grace-period=" + t.NodeMonitorGracePeriod().String(),
	}
}

// KubeAPIServerArgs are kube-apiserver's flags for t; none for the
// defaults.
func (t Timing) KubeAPIServerArgs() []string {
	if !t.Scaled() {
		return nil
	}
	s := fmt.Sprint(t.TolerationSeconds())
	return []string{"--default-not-ready-toleration-seconds=" + s, "--default-unreachable-toleration-seconds=" + s}
}

// MaxWaitForUnmountEnv is the environment variable through which
// realkube's timed kube-controller-manager (realkube/build: the upstream
// controller manager with DefaultTimerConfig's wait set from it before it
// starts) takes MaxWaitForUnmount, which v1.37 offers no flag for.
const MaxWaitForUnmountEnv = "CSISIM_ATTACH_DETACH_MAX_WAIT_FOR_UNMOUNT"
