package explain

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// runningPod is a pod that runs on node-1 with the tolerations the
// DefaultTolerationSeconds admission plugin gives every pod.
func runningPod() corev1.Pod {
	p := pod("app", "node-1", "data")
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)})
	}
	return p
}

func noExecute(key string, ago time.Duration) corev1.Taint {
	added := at(ago)
	return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}
}

// A pod whose node is not Ready is not "nothing stuck": the node's Ready
// condition, since when, the taint and when the pod's toleration of it
// runs out, and what that means for its volumes.
func TestPodOnUnreadyNode(t *testing.T) {
	tests := []struct {
		name string
		node func() corev1.Node
		pod  func() corev1.Pod
		want []string
		due  time.Duration // from now; 0: none
	}{
		{
			name: "unreachable, tolerated for 300 s",
			node: func() corev1.Node {
				n := node("node-1", corev1.ConditionUnknown, time.Minute)
				n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}, noExecute(corev1.TaintNodeUnreachable, 55*time.Second)}
				return n
			},
			pod: func() corev1.Pod {
				p := runningPod()
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: at(55 * time.Second)}}
				return p
			},
			want: []string{"1. Pod default/app: Running on node node-1 (node not Ready)", "Its node node-1 is not Ready (Ready=Unknown since 1m0s ago)",
				"the pod's status (Running) is only what the kubelet last reported", "marked the pod not Ready 55s ago", "Its volumes stay attached to node-1",
				"node.kubernetes.io/unreachable:NoExecute (added 55s ago), which the pod tolerates for 300 s (the DefaultTolerationSeconds admission plugin's default)",
				"the taint eviction controller deletes the pod in 4m5s", "Next: Once deleted, the pod stays Terminating", "maxWaitForUnmountDuration",
				"taint it node.kubernetes.io/out-of-service=nodeshutdown:NoExecute", "2. Node node-1: Ready=Unknown since 1m0s ago"},
			due: 4*time.Minute + 5*time.Second,
		},
		{
			name: "not ready, not tainted yet",
			node: func() corev1.Node { return node("node-1", corev1.ConditionFalse, 10*time.Second) },
			pod:  runningPod,
			want: []string{"Running on node node-1 (node not Ready)", "Ready=False since 10s ago", "its kubelet reports that the node cannot run pods",
				"has not tainted the node node.kubernetes.io/not-ready:NoExecute yet"},
		},
		{
			name: "a taint the pod does not tolerate",
			node: func() corev1.Node {
				n := node("node-1", corev1.ConditionUnknown, time.Minute)
				n.Spec.Taints = []corev1.Taint{noExecute(corev1.TaintNodeUnreachable, 5*time.Second)}
				return n
			},
			pod: func() corev1.Pod {
				p := runningPod()
				p.Spec.Tolerations = nil
				return p
			},
			want: []string{"which the pod does not tolerate: the taint eviction controller deletes the pod now (it was due 5s ago)"},
			due:  -5 * time.Second,
		},
		{
			name: "tolerated for ever",
			node: func() corev1.Node {
				n := node("node-1", corev1.ConditionUnknown, time.Minute)
				n.Spec.Taints = []corev1.Taint{noExecute(corev1.TaintNodeUnreachable, 5*time.Second)}
				return n
			},
			pod: func() corev1.Pod {
				p := runningPod()
				p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
				return p
			},
			want: []string{"tolerates the node's NoExecute taints for ever: it is not evicted"},
		},
		{
			name: "out of service",
			node: func() corev1.Node {
				n := node("node-1", corev1.ConditionUnknown, time.Minute)
				n.Spec.Taints = []corev1.Taint{noExecute(corev1.TaintNodeUnreachable, 30*time.Second), noExecute(corev1.TaintNodeOutOfService, 10*time.Second)}
				return n
			},
			pod: runningPod,
			// A NoExecute taint the pod does not tolerate: evicted at once.
			want: []string{"node.kubernetes.io/out-of-service:NoExecute (added 10s ago), which the pod does not tolerate", "deletes the pod now (it was due 10s ago)",
				"Next: Node node-1 has the node.kubernetes.io/out-of-service taint"},
			due: -10 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := &Snapshot{Now: now, Pods: []corev1.Pod{tt.pod()}, Nodes: []corev1.Node{tt.node()}}
			e, err := Explain(snap, Ref{Kind: KindPod, Namespace: "default", Name: "app"})
			if err != nil {
				t.Fatal(err)
			}
			out := e.String()
			if strings.Contains(out, "nothing is stuck") {
				t.Errorf("a pod on a node not Ready is said to be fine:\n%s", out)
			}
			expectInOrder(t, out, tt.want)
			var due time.Time
			if tt.due != 0 {
				due = now.Add(tt.due)
			}
			if !e.Findings[0].Due.Equal(due) {
				t.Errorf("due %s, want %s", e.Findings[0].Due, due)
			}
		})
	}
}

// A pod whose node is gone from a snapshot that lists nodes.
func TestPodOnGoneNode(t *testing.T) {
	snap := &Snapshot{Now: now, Pods: []corev1.Pod{runningPod()}, Nodes: []corev1.Node{node("node-2", corev1.ConditionTrue, time.Hour)}}
	e, err := Explain(snap, Ref{Kind: KindPod, Namespace: "default", Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	expectInOrder(t, e.String(), []string{"Running on node node-1 (node gone)", "Its node node-1 no longer exists", "pod garbage collector"})
}

func expectInOrder(t *testing.T, out string, want []string) {
	t.Helper()
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("want %q (in this order) in:\n%s", w, out)
			return
		}
		rest = rest[i+len(w):]
	}
}
