package kubelet

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// crashEnv is a statusEnv whose pod runs a second container,
// csi-provisioner, whose process exits as exit says.
func crashEnv(t *testing.T, exit ContainerExit) *env {
	t.Helper()
	e := statusEnv(t, false, func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "csi-provisioner",
			Image: "registry.k8s.io/sig-storage/csi-provisioner:v6.4.0", Args: []string{"--leader-elect"}})
	})
	e.k.cfg.ContainerExits = func(_ *corev1.Pod, c *corev1.Container, _ time.Time) *ContainerExit {
		if c.Name != "csi-provisioner" {
			return nil
		}
		return &exit
	}
	return e
}

// refusedFlag is the exit of a binary that refuses its flags.
var refusedFlag = ContainerExit{Code: 2, Stderr: []OutputLine{{Text: "Usage of /csi-provisioner:"}, {Text: "unknown flag: --leader-elect"}}}

// statusesOnTheClock syncs the pod as its queue would, the clock moved to
// each requeue, n times, and describes the csi-provisioner container's
// status after each, by the time since the first.
func (e *env) statusesOnTheClock(n int) []string {
	e.t.Helper()
	start := e.clock.Now()
	got := []string{"+0s " + describe(e.provisionerStatus())}
	for range n {
		d, ok := requeuedAfter(e.sync("default/app"))
		if !ok {
			e.t.Fatal("the pod is not synced again")
		}
		e.clock.Step(d)
		if err := e.sync("default/app"); err != nil {
			if _, ok := requeuedAfter(err); !ok {
				e.t.Fatal(err)
			}
		}
		got = append(got, fmt.Sprintf("+%s %s", e.clock.Since(start), describe(e.provisionerStatus())))
	}
	return got
}

// provisionerStatus is the crash-looping container's status as the API
// server has it.
func (e *env) provisionerStatus() corev1.ContainerStatus {
	e.t.Helper()
	for _, s := range e.apiPod().Status.ContainerStatuses {
		if s.Name == "csi-provisioner" {
			return s
		}
	}
	e.t.Fatal("no status of container csi-provisioner")
	return corev1.ContainerStatus{}
}

// describe is a container's status in a line: restarts, state, last state.
func describe(s corev1.ContainerStatus) string {
	return fmt.Sprintf("restarts=%d ready=%t %s; last %s", s.RestartCount, s.Ready, describeState(s.State), describeState(s.LastTerminationState))
}

// crashMessage is the waiting message of the container after a backoff of d.
func crashMessage(d string) string {
	return "waiting CrashLoopBackOff: back-off " + d + " restarting failed container=csi-provisioner pod=app_default(uid-1)"
}

func describeState(st corev1.ContainerState) string {
	switch {
	case st.Waiting != nil:
		return "waiting " + st.Waiting.Reason + ": " + st.Waiting.Message
	case st.Terminated != nil:
		return fmt.Sprintf("terminated %s %d", st.Terminated.Reason, st.Terminated.ExitCode)
	case st.Running != nil:
		return "running"
	}
	return "-"
}

// A container that exits at start goes through the real kubelet's states
// on the clock: terminated Error, restarted at PLEG's next relist, then
// waiting CrashLoopBackOff for 10s, 20s, ... up to 5m between restarts,
// with the BackOff event; the pod runs, not ready; each run's log is its
// own, served by the run's container ID.
func TestCrashLoopBackOff(t *testing.T) {
	e := crashEnv(t, refusedFlag)
	e.syncUntilRunning()
	got := e.statusesOnTheClock(14)
	want := []string{
		"+0s restarts=0 ready=false terminated Error 2; last -",
		"+1s restarts=1 ready=false terminated Error 2; last terminated Error 2",
		"+2s restarts=1 ready=false " + crashMessage("10s") + "; last terminated Error 2",
		"+11s restarts=2 ready=false terminated Error 2; last terminated Error 2",
		"+12s restarts=2 ready=false " + crashMessage("20s") + "; last terminated Error 2",
		"+31s restarts=3 ready=false terminated Error 2; last terminated Error 2",
		"+32s restarts=3 ready=false " + crashMessage("40s") + "; last terminated Error 2",
		"+1m11s restarts=4 ready=false terminated Error 2; last terminated Error 2",
		"+1m12s restarts=4 ready=false " + crashMessage("1m20s") + "; last terminated Error 2",
		"+2m31s restarts=5 ready=false terminated Error 2; last terminated Error 2",
		"+2m32s restarts=5 ready=false " + crashMessage("2m40s") + "; last terminated Error 2",
		"+5m11s restarts=6 ready=false terminated Error 2; last terminated Error 2",
		"+5m12s restarts=6 ready=false " + crashMessage("5m0s") + "; last terminated Error 2",
		"+10m11s restarts=7 ready=false terminated Error 2; last terminated Error 2",
		"+10m12s restarts=7 ready=false " + crashMessage("5m0s") + "; last terminated Error 2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the container's statuses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	pod := e.apiPod()
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s, want Running", pod.Status.Phase)
	}
	for _, c := range pod.Status.Conditions {
		if (c.Type == corev1.PodReady || c.Type == corev1.ContainersReady) &&
			(c.Status != corev1.ConditionFalse || c.Message != "containers with unready status: [csi-provisioner]") {
			t.Errorf("condition %s=%s %q, want False: containers with unready status: [csi-provisioner]", c.Type, c.Status, c.Message)
		}
	}
	backOffs := e.eventMessages("BackOff")
	if len(backOffs) == 0 || backOffs[0] != "Pod: Back-off restarting failed container csi-provisioner in pod app_default(uid-1)" {
		t.Errorf("BackOff events %q", backOffs)
	}
	st := e.provisionerStatus()
	lines, err := ReadContainerLog(e.dir, pod, "csi-provisioner", st.LastTerminationState.Terminated.ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[1].Text != "unknown flag: --leader-elect" {
		t.Errorf("log of the last run %+v", lines)
	}
	if _, err := os.Stat(runLogPath(e.dir, "default", "app", "uid-1", "csi-provisioner", 7)); err != nil {
		t.Errorf("the log of the 8th run: %v", err)
	}
}

// A container whose process runs a while before it exits (a sidecar that
// gives up connecting to its driver after 30s) is running and ready until
// it exits; its backoff counts from its exit.
func TestCrashLoopAfterARun(t *testing.T) {
	e := crashEnv(t, ContainerExit{Code: 1, After: 30 * time.Second,
		Stderr: []OutputLine{{After: 10 * time.Second, Text: "Still connecting"}, {After: 30 * time.Second, Text: "context deadline exceeded"}}})
	e.syncUntilRunning()
	got := e.statusesOnTheClock(6)
	want := []string{
		"+0s restarts=0 ready=true running; last -",
		"+30s restarts=0 ready=false terminated Error 1; last -",
		"+31s restarts=1 ready=true running; last terminated Error 1",
		"+1m1s restarts=1 ready=false terminated Error 1; last terminated Error 1",
		"+1m2s restarts=1 ready=false " + crashMessage("10s") + "; last terminated Error 1",
		"+1m11s restarts=2 ready=true running; last terminated Error 1",
		"+1m41s restarts=2 ready=false terminated Error 1; last terminated Error 1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the container's statuses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	pod := e.apiPod()
	lines, err := ReadContainerLog(e.dir, pod, "csi-provisioner", e.provisionerStatus().ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[0].Text != "Still connecting" || lines[1].Time.Sub(lines[0].Time) != 20*time.Second {
		t.Errorf("log of the last run %+v", lines)
	}
}
