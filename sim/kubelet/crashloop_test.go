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
// csi-provisioner, whose process exits 2 the moment it starts.
func crashEnv(t *testing.T) *env {
	t.Helper()
	e := statusEnv(t, false, func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "csi-provisioner",
			Image: "registry.k8s.io/sig-storage/csi-provisioner:v6.4.0", Args: []string{"--leader-elect"}})
	})
	e.k.cfg.ContainerExits = func(_ *corev1.Pod, c *corev1.Container, _ time.Time) *ContainerExit {
		if c.Name != "csi-provisioner" {
			return nil
		}
		return &ContainerExit{Code: 2, Stderr: []string{"Usage of /csi-provisioner:", "unknown flag: --leader-elect"}}
	}
	return e
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
	state := func(st corev1.ContainerState) string {
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
	return fmt.Sprintf("restarts=%d ready=%t %s; last %s", s.RestartCount, s.Ready, state(s.State), state(s.LastTerminationState))
}

// A container that exits at start goes through the real kubelet's states
// on the clock: terminated Error, restarted at PLEG's next relist, then
// waiting CrashLoopBackOff for 10s, 20s, ... up to 5m between restarts,
// with the BackOff event; the pod runs, not ready; each run's log is its
// own, served by the run's container ID.
func TestCrashLoopBackOff(t *testing.T) {
	e := crashEnv(t)
	e.syncUntilRunning()
	start := e.clock.Now()
	msg := func(d string) string {
		return "waiting CrashLoopBackOff: back-off " + d + " restarting failed container=csi-provisioner pod=app_default(uid-1)"
	}
	var got []string
	got = append(got, "+0s "+describe(e.provisionerStatus()))
	for range 14 {
		d, ok := requeuedAfter(e.sync("default/app"))
		if !ok {
			t.Fatal("the pod is not synced again")
		}
		e.clock.Step(d)
		if err := e.sync("default/app"); err != nil {
			if _, ok := requeuedAfter(err); !ok {
				t.Fatal(err)
			}
		}
		got = append(got, fmt.Sprintf("+%s %s", e.clock.Since(start), describe(e.provisionerStatus())))
	}
	want := []string{
		"+0s restarts=0 ready=false terminated Error 2; last -",
		"+1s restarts=1 ready=false terminated Error 2; last terminated Error 2",
		"+2s restarts=1 ready=false " + msg("10s") + "; last terminated Error 2",
		"+11s restarts=2 ready=false terminated Error 2; last terminated Error 2",
		"+12s restarts=2 ready=false " + msg("20s") + "; last terminated Error 2",
		"+31s restarts=3 ready=false terminated Error 2; last terminated Error 2",
		"+32s restarts=3 ready=false " + msg("40s") + "; last terminated Error 2",
		"+1m11s restarts=4 ready=false terminated Error 2; last terminated Error 2",
		"+1m12s restarts=4 ready=false " + msg("1m20s") + "; last terminated Error 2",
		"+2m31s restarts=5 ready=false terminated Error 2; last terminated Error 2",
		"+2m32s restarts=5 ready=false " + msg("2m40s") + "; last terminated Error 2",
		"+5m11s restarts=6 ready=false terminated Error 2; last terminated Error 2",
		"+5m12s restarts=6 ready=false " + msg("5m0s") + "; last terminated Error 2",
		"+10m11s restarts=7 ready=false terminated Error 2; last terminated Error 2",
		"+10m12s restarts=7 ready=false " + msg("5m0s") + "; last terminated Error 2",
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
