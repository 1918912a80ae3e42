package fakekube

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	testingclock "k8s.io/utils/clock/testing"
)

// TestPodLogs asks pods/log as kubectl does, of pods in each state, and
// gets the log lines or the real server's and kubelet's errors.
func TestPodLogs(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(start.Add(time.Hour))
	logs := map[string][]LogLine{
		"running/app/":        {{Time: start, Text: "first"}, {Time: start.Add(30 * time.Minute), Text: "second"}, {Time: start.Add(50 * time.Minute), Text: "third"}},
		"crashing/app/run-1":  {{Time: start, Text: "flag provided but not defined: -leader-elect"}},
		"restarted/app/run-0": {{Time: start, Text: "the run before"}},
		"restarted/app/run-1": {{Time: start, Text: "the run now"}},
	}
	srv := New(Options{Clock: clk, ContainerLogs: func(pod *corev1.Pod, container, id string) ([]LogLine, error) {
		return logs[pod.Name+"/"+container+"/"+id], nil
	}})
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig("test"))
	ctx := context.Background()
	state := func(s corev1.ContainerState) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: "app", State: s}}
	}
	for _, p := range []struct {
		name, node string
		containers []string
		statuses   []corev1.ContainerStatus
	}{
		{"running", "node-1", []string{"app"}, state(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})},
		{"creating", "node-1", []string{"app"}, state(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}})},
		{"pulling", "node-1", []string{"app"}, state(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}})},
		{"nostatus", "node-1", []string{"app"}, nil},
		{"unscheduled", "", []string{"app"}, nil},
		{"two", "node-1", []string{"app", "side"}, nil},
		// Waiting in its backoff: its last run's log, also as --previous.
		{"crashing", "node-1", []string{"app"}, []corev1.ContainerStatus{{Name: "app", RestartCount: 1, ContainerID: "run-1",
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, ContainerID: "run-1"}}}}},
		// Running again: its run now, and --previous the one before.
		{"restarted", "node-1", []string{"app"}, []corev1.ContainerStatus{{Name: "app", RestartCount: 1, ContainerID: "run-1",
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, ContainerID: "run-0"}}}}},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: p.node}}
		for _, c := range p.containers {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "busybox"})
		}
		created, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.ContainerStatuses = p.statuses
		if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	i64 := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name, pod string
		opts      corev1.PodLogOptions
		want      string // the log, or the error's message
		badReq    bool
	}{
		{"all", "running", corev1.PodLogOptions{}, "first\nsecond\nthird\n", false},
		{"tail", "running", corev1.PodLogOptions{TailLines: i64(1)}, "third\n", false},
		{"since", "running", corev1.PodLogOptions{SinceSeconds: i64(1799)}, "third\n", false},
		{"timestamps", "running", corev1.PodLogOptions{Timestamps: true, TailLines: i64(1)}, "2026-01-01T00:50:00Z third\n", false},
		{"limit", "running", corev1.PodLogOptions{LimitBytes: i64(8)}, "first\nse", false},
		{"previous", "running", corev1.PodLogOptions{Previous: true}, `previous terminated container "app" in pod "running" not found`, true},
		{"crash loop", "crashing", corev1.PodLogOptions{}, "flag provided but not defined: -leader-elect\n", false},
		{"crash loop, previous", "crashing", corev1.PodLogOptions{Previous: true}, "flag provided but not defined: -leader-elect\n", false},
		{"restarted", "restarted", corev1.PodLogOptions{}, "the run now\n", false},
		{"restarted, previous", "restarted", corev1.PodLogOptions{Previous: true}, "the run before\n", false},
		{"waiting", "creating", corev1.PodLogOptions{}, `container "app" in pod "creating" is waiting to start: ContainerCreating`, true},
		{"image pull", "pulling", corev1.PodLogOptions{}, `container "app" in pod "pulling" is waiting to start: trying and failing to pull image`, true},
		{"no status", "nostatus", corev1.PodLogOptions{}, `container "app" in pod "nostatus" is not available`, true},
		{"no node", "unscheduled", corev1.PodLogOptions{}, "", false},
		{"which container", "two", corev1.PodLogOptions{}, "a container name must be specified for pod two, choose one of: [app side]", true},
		{"no such container", "running", corev1.PodLogOptions{Container: "nope"}, "container nope is not valid for pod running", true},
		{"negative tail", "running", corev1.PodLogOptions{TailLines: i64(-2)}, "tailLines: Invalid value: -2: must be greater than or equal to 0", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream, err := cs.CoreV1().Pods("default").GetLogs(tc.pod, &tc.opts).Stream(ctx)
			if tc.badReq {
				if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want a Bad Request saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			got, _ := io.ReadAll(stream)
			if string(got) != tc.want {
				t.Errorf("log %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := cs.CoreV1().Pods("default").GetLogs("gone", &corev1.PodLogOptions{}).Stream(ctx); !apierrors.IsNotFound(err) {
		t.Errorf("log of a missing pod: %v, want Not Found", err)
	}
}
