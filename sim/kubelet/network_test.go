package kubelet

import (
	"context"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Pods get the lowest address of the node's subnet no pod here has.
func TestSandboxIP(t *testing.T) {
	tests := []struct {
		name   string
		subnet string
		others []string // pod IPs of other pods on the node
		own    string   // the pod's own podIP
		want   string
	}{
		{name: "first", subnet: "10.88.3.0/24", want: "10.88.3.2"},
		{name: "default subnet", want: "10.88.0.2"},
		{name: "the next free", subnet: "10.88.3.0/24", others: []string{"10.88.3.2", "10.88.3.4"}, want: "10.88.3.3"},
		{name: "keeps its own", subnet: "10.88.3.0/24", own: "10.88.3.9", want: "10.88.3.9"},
		{name: "no broadcast address", subnet: "10.88.3.0/30", others: []string{"10.88.3.2"}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			e.k.cfg.PodSubnet = tc.subnet
			for i, ip := range tc.others {
				other := e.pod.DeepCopy()
				other.Name, other.UID = "other-"+string(rune('a'+i)), types.UID("other-"+string(rune('a'+i)))
				other.ResourceVersion = ""
				other.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}
				if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), other, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			e.waitFor("the other pods", func() bool {
				pods, _ := e.k.pods.List(labels.Everything())
				return len(pods) == len(tc.others)+1
			})
			pod := e.pod.DeepCopy()
			pod.Status.PodIP = tc.own
			got, err := e.k.sandboxIP(pod)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("got %s, want no free address", got)
				}
				return
			}
			if err != nil || got != netip.MustParseAddr(tc.want) {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
			// The same pod keeps it.
			if again, _ := e.k.sandboxIP(pod); again != got {
				t.Errorf("again: %s", again)
			}
		})
	}
}

// TestNodeNetwork: kind's addresses for the first nodes, and distinct
// valid ones past 254 nodes, where a thousand-node scale run goes.
func TestNodeNetwork(t *testing.T) {
	for _, tt := range []struct {
		index          int
		nodeIP, subnet string
	}{
		{0, "172.18.0.2", "10.88.1.0/24"},
		{1, "172.18.0.3", "10.88.2.0/24"},
		{253, "172.18.0.255", "10.88.254.0/24"},
		{254, "172.18.1.0", "10.88.255.0/24"},
		{255, "172.18.1.1", "10.89.0.0/24"},
		{999, "172.18.3.233", "10.91.232.0/24"},
	} {
		nodeIP, subnet := NodeNetwork(tt.index)
		if nodeIP != tt.nodeIP || subnet != tt.subnet {
			t.Errorf("NodeNetwork(%d) = %s, %s; want %s, %s", tt.index, nodeIP, subnet, tt.nodeIP, tt.subnet)
		}
	}
	seen := map[string]bool{}
	for i := range 1000 {
		nodeIP, subnet := NodeNetwork(i)
		if seen[nodeIP] || seen[subnet] {
			t.Fatalf("node %d: %s or %s given twice", i, nodeIP, subnet)
		}
		seen[nodeIP], seen[subnet] = true, true
	}
}
