package fault

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
)

func TestDescribe(t *testing.T) {
	tests := []struct {
		f    Fault
		want string
	}{
		{Fault{Kind: NodeLoss, Node: "node-1"}, "node-loss on node-1"},
		{Fault{Kind: StaleVolumeAttachment, Node: "node-1", Claim: "data"}, "stale-volumeattachment data on node-1"},
		{Fault{Kind: CSIError, CSI: CSI{Method: "NodeStageVolume", Volume: "v", Code: codes.Unavailable}}, "csi-error NodeStageVolume volume v Unavailable"},
		{Fault{Kind: CSIDelay, CSI: CSI{Method: "*", Delay: time.Second}}, "csi-delay * 1s"},
		{Fault{Kind: DriverRestart, Plugin: Node, Node: "n", LoseState: true}, "driver-restart node without state on n"},
		{Fault{Kind: NodeVolumeLimit, Node: "node-1", Limit: 1}, "node-volume-limit 1 on node-1"},
		{Fault{Kind: VolumeHealth, Claim: "data", Health: Health{Status: "DEGRADED", Reason: "ReplicaLost"}}, "volume-health DEGRADED ReplicaLost of claim data"},
		{Fault{Kind: VolumeHealth, Claim: "data", Health: Health{Status: Healthy}}, "volume-health Healthy of claim data"},
		{Fault{Kind: WatchDrop, Component: "external-attacher", Resource: "pods"}, "watch-drop external-attacher pods"},
		{Fault{Kind: APIServerDown, API: API{Duration: 30 * time.Second}}, "api-server-down for 30s"},
		{Fault{Kind: APISlowWrites, API: API{Duration: time.Minute, Latency: 2 * time.Second}}, "api-slow-writes +2s per write for 1m0s"},
		{Fault{Kind: APIThrottle, Times: 5, Component: "external-provisioner", API: API{RetryAfter: time.Second}},
			"api-throttle 429 Retry-After 1s next 5 requests of external-provisioner"},
	}
	for _, tt := range tests {
		if got := tt.f.Describe(); got != tt.want {
			t.Errorf("Describe() = %q, want %q", got, tt.want)
		}
	}
}

func TestKnownAndKubelet(t *testing.T) {
	for _, k := range Kinds {
		if !Known(k) {
			t.Errorf("Known(%s) = false", k)
		}
	}
	if Known("meteor-strike") {
		t.Error("Known(meteor-strike) = true")
	}
	if node, ok := KubeletNode(KubeletComponent("node-2")); !ok || node != "node-2" {
		t.Errorf("KubeletNode(kubelet:node-2) = %q, %v", node, ok)
	}
	for _, c := range []string{"kubelet:", "external-attacher", "kubelet-node-1"} {
		if _, ok := KubeletNode(c); ok {
			t.Errorf("KubeletNode(%q) says it is a kubelet", c)
		}
	}
}

func TestOutOfServiceTaint(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	taint := OutOfServiceTaint(at)
	if taint.Key != "node.kubernetes.io/out-of-service" || taint.Value != "nodeshutdown" || taint.Effect != corev1.TaintEffectNoExecute {
		t.Errorf("taint %+v", taint)
	}
	if !taint.TimeAdded.Time.Equal(at.Truncate(time.Second)) {
		t.Errorf("timeAdded %v, want %v (to the second, as the API server stores it)", taint.TimeAdded, at.Truncate(time.Second))
	}
}

func TestUnsupported(t *testing.T) {
	err := Unsupported(CSIHang, "kind", "no proxy")
	var uerr *UnsupportedError
	if !errors.As(err, &uerr) || uerr.Kind != CSIHang || err.Error() != "csi-hang cannot be injected on kind: no proxy" {
		t.Errorf("Unsupported = %v", err)
	}
}

func TestCheckAPIServerBounds(t *testing.T) {
	for _, tt := range []struct {
		f    Fault
		want string // "" for accepted
	}{
		{Fault{Kind: APIServerDown}, "it needs a duration above 0"},
		{Fault{Kind: APIServerDown, API: API{Duration: time.Second}}, ""},
		{Fault{Kind: APISlowWrites, API: API{Duration: time.Second}}, "it needs a latency and a duration above 0"},
		{Fault{Kind: APISlowWrites, API: API{Duration: time.Second, Latency: time.Millisecond}}, ""},
		{Fault{Kind: APIThrottle}, "it needs times or a duration above 0"},
		{Fault{Kind: APIThrottle, Times: 3}, ""},
		{Fault{Kind: NodeLoss}, ""},
	} {
		err := CheckAPIServerBounds(tt.f, "the test backend")
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", tt.f.Kind, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error saying %q", tt.f.Kind, err, tt.want)
		}
	}
}

func TestAPIServerStory(t *testing.T) {
	for _, tt := range []struct {
		f                 Fault
		begins, ends      string
		throttledRequests int
	}{
		{Fault{Kind: APIServerDown, API: API{Duration: 30 * time.Second}},
			"stopped for 30s: every component's requests are refused (connection refused) and its watches end",
			"the API server is back; the reflectors list again after their backoff", 0},
		{Fault{Kind: APISlowWrites, Component: "external-provisioner", API: API{Duration: time.Minute, Latency: 2 * time.Second}},
			"external-provisioner's writes take 2s longer, for 1m0s", "writes are answered at once again", 0},
		{Fault{Kind: APIThrottle, Times: 3, API: API{RetryAfter: time.Second}},
			"every component's next 3 requests get 429 TooManyRequests, Retry-After 1s", "", 3},
		{Fault{Kind: APIThrottle, API: API{Duration: 10 * time.Second, RetryAfter: time.Second}},
			"every component's requests for 10s get 429 TooManyRequests, Retry-After 1s", "requests are served again", -1},
	} {
		begins, ends, n := APIServerStory(tt.f)
		if begins != tt.begins || ends != tt.ends || n != tt.throttledRequests {
			t.Errorf("%s: (%q, %q, %d), want (%q, %q, %d)", tt.f.Kind, begins, ends, n, tt.begins, tt.ends, tt.throttledRequests)
		}
	}
}
