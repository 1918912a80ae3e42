package statefulset

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// isCreated: the API server has the pod (it set a phase).
func isCreated(pod *corev1.Pod) bool { return pod.Status.Phase != "" }

func isTerminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

func isRunningAndReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func isHealthy(pod *corev1.Pod) bool { return isRunningAndReady(pod) && !isTerminating(pod) }

// title is strings.Title for the controller's one-word verbs.
func title(verb string) string {
	if verb == "" {
		return ""
	}
	return strings.ToUpper(verb[:1]) + verb[1:]
}

func labelsEverything() labels.Selector { return labels.Everything() }

func cmpString(a, b string) int { return strings.Compare(a, b) }
