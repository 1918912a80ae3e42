package diff

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRegistered(t *testing.T) {
	ev := func(kind, name, reason string) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}, Reason: reason}
	}
	nodes := []string{"node-a", "node-b"}
	tests := []struct {
		name   string
		events []corev1.Event
		want   bool
	}{
		{"none", nil, false},
		{"one of two", []corev1.Event{ev("Node", "node-a", "RegisteredNode")}, false},
		{"another reason", []corev1.Event{ev("Node", "node-a", "RegisteredNode"), ev("Node", "node-b", "Starting")}, false},
		{"another kind", []corev1.Event{ev("Node", "node-a", "RegisteredNode"), ev("Pod", "node-b", "RegisteredNode")}, false},
		{"both", []corev1.Event{ev("Node", "node-b", "RegisteredNode"), ev("Node", "node-a", "RegisteredNode")}, true},
	}
	for _, tc := range tests {
		if got := registered(tc.events, nodes); got != tc.want {
			t.Errorf("%s: registered = %v, want %v", tc.name, got, tc.want)
		}
	}
}
