package kubelet

// Container logs in the CRI log format — models what the container
// runtime writes under /var/log/pods and what kubernetes
// pkg/kubelet/kuberuntime/logs serves for pods/log.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Container logs: a real container runtime writes what a container prints
// to /var/log/pods/<namespace>_<name>_<uid>/<container>/<restarts>.log, one
// line each "<RFC3339Nano time> stdout F <text>" (the CRI log format), and
// the kubelet serves those files for pods/log. The simulated containers
// print what the built-in workload did with their volumes; the kubelet
// writes it in the same place and format under its directory, stamped on
// the cluster's clock, so that `kubectl logs` shows it.

// LogLine is one line a container printed.
type LogLine struct {
	Time time.Time
	Text string
}

// containerLogsDir is the kubelet's /var/log/pods.
func containerLogsDir(kubeletDir string) string { return filepath.Join(kubeletDir, "container-logs") }

// podLogsDir is where a pod's containers' logs go.
func podLogsDir(kubeletDir, namespace, name string, uid types.UID) string {
	return filepath.Join(containerLogsDir(kubeletDir), namespace+"_"+name+"_"+string(uid))
}

// containerLogPath is the log of a container's first run (0.log): the
// built-in workload's containers never restart.
func containerLogPath(kubeletDir, namespace, name string, uid types.UID, container string) string {
	return runLogPath(kubeletDir, namespace, name, uid, container, 0)
}

// runLogPath is the log of a container's run after restarts restarts,
// <restarts>.log as the runtime names it.
func runLogPath(kubeletDir, namespace, name string, uid types.UID, container string, restarts int32) string {
	return filepath.Join(podLogsDir(kubeletDir, namespace, name, uid), container, fmt.Sprintf("%d.log", restarts))
}

// writeRunLog writes what a container's run, started at started, wrote
// to stderr to its log, each line stamped when it was written.
func (k *Kubelet) writeRunLog(pod *corev1.Pod, container string, restarts int32, started time.Time, lines []OutputLine) error {
	logPath := runLogPath(k.cfg.Dir, pod.Namespace, pod.Name, pod.UID, container, restarts)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return fmt.Errorf("writing the log of container %s: %w", container, err)
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s stderr F %s\n", started.Add(l.After).UTC().Format(time.RFC3339Nano), l.Text)
	}
	if err := os.WriteFile(logPath, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing the log of container %s: %w", container, err)
	}
	return nil
}

// appendContainerLog adds a line to the log of each container of pod that
// mounts volume: line(the container's mount path of it).
func (k *Kubelet) appendContainerLog(pod *corev1.Pod, volume string, line func(mountPath string) string) error {
	stamp := k.clock.Now().UTC().Format(time.RFC3339Nano)
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		path, ok := mountPathOf(c, volume)
		if !ok {
			continue
		}
		logPath := containerLogPath(k.cfg.Dir, pod.Namespace, pod.Name, pod.UID, c.Name)
		if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
			return fmt.Errorf("writing the log of container %s: %w", c.Name, err)
		}
		f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("writing the log of container %s: %w", c.Name, err)
		}
		_, werr := fmt.Fprintf(f, "%s stdout F %s\n", stamp, line(path))
		if err := errors.Join(werr, f.Close()); err != nil {
			return fmt.Errorf("writing the log of container %s: %w", c.Name, err)
		}
	}
	return nil
}

// mountPathOf is where container c mounts volume.
func mountPathOf(c corev1.Container, volume string) (string, bool) {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath, true
		}
	}
	return "", false
}

// removePodLogs removes a pod's logs once its containers are gone, as the
// real kubelet's container garbage collection does.
func (k *Kubelet) removePodLogs(namespace, name string, uid types.UID) error {
	if err := os.RemoveAll(podLogsDir(k.cfg.Dir, namespace, name, uid)); err != nil {
		return fmt.Errorf("removing the logs of pod %s/%s: %w", namespace, name, err)
	}
	return nil
}

// ReadContainerLog reads what the run of container of pod with that
// container ID has printed on the node whose kubelet directory is
// kubeletDir: nothing (and no error) if it has printed nothing, or if no
// run of it has that ID ("": its first run).
func ReadContainerLog(kubeletDir string, pod *corev1.Pod, container, containerID string) ([]LogLine, error) {
	restarts := runOf(pod, container, containerID)
	if restarts < 0 {
		return nil, nil
	}
	f, err := os.Open(runLogPath(kubeletDir, pod.Namespace, pod.Name, pod.UID, container, restarts))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the log of container %s: %w", container, err)
	}
	defer f.Close()
	var lines []LogLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		stamp, rest, _ := strings.Cut(sc.Text(), " ")
		t, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			return nil, fmt.Errorf("reading the log of container %s: line %q: %w", container, sc.Text(), err)
		}
		// "stdout F <text>": the stream and a full (not partial) line.
		_, rest, _ = strings.Cut(rest, " ")
		_, text, _ := strings.Cut(rest, " ")
		lines = append(lines, LogLine{Time: t, Text: text})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the log of container %s: %w", container, err)
	}
	return lines, nil
}

// runOf is the run of the container the ID names, by its restarts: one
// of those the pod's status counts; -1 if none has it.
func runOf(pod *corev1.Pod, container, containerID string) int32 {
	if containerID == "" {
		return 0
	}
	var count int32
	for _, s := range append(append([]corev1.ContainerStatus{}, pod.Status.ContainerStatuses...), pod.Status.InitContainerStatuses...) {
		if s.Name == container {
			count = s.RestartCount
			break
		}
	}
	for n := range count + 1 {
		if runContainerID(pod.UID, container, n) == containerID {
			return n
		}
	}
	return -1
}
