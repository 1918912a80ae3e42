package fakekube

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestNodeProxy: nodes/{name}/proxy/{path} answers what the node's
// kubelet serves; a path it does not serve, a node that does not exist
// and a server without kubelets are refused with their reasons.
func TestNodeProxy(t *testing.T) {
	var asked []string
	proxy := func(node, path string) ([]byte, string, error) {
		asked = append(asked, node+" "+path)
		if path != "metrics" {
			return nil, "", &UnservedPath{Path: path, Served: []string{"/metrics"}}
		}
		return []byte("kubelet_volume_stats_used_bytes 1\n"), "text/plain; version=0.0.4", nil
	}
	for _, tc := range []struct {
		name      string
		proxy     NodeProxy
		path      string
		code      int
		body      string
		askedPath string
	}{
		{"metrics", proxy, "/api/v1/nodes/node-1/proxy/metrics", 200, "kubelet_volume_stats_used_bytes 1\n", "node-1 metrics"},
		{"a path the kubelet does not serve", proxy, "/api/v1/nodes/node-1/proxy/stats/summary", 404,
			"nodes/node-1/proxy/stats/summary is not supported by csisim serve: /stats/summary is not served by csisim's simulated kubelet (it serves /metrics)", "node-1 stats/summary"},
		{"a node that does not exist", proxy, "/api/v1/nodes/node-9/proxy/metrics", 404, `nodes \"node-9\" not found`, ""},
		{"no kubelets", nil, "/api/v1/nodes/node-1/proxy/metrics", 503, `no kubelet of csisim answers for node \"node-1\"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = nil
			s := New(Options{NodeProxy: tc.proxy})
			cs := kubernetes.NewForConfigOrDie(s.RESTConfig("test"))
			if _, err := cs.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != tc.code || !strings.Contains(string(body), tc.body) {
				t.Errorf("GET %s: %d %s, want %d with %q", tc.path, rec.Code, body, tc.code, tc.body)
			}
			if got := strings.Join(asked, ","); got != tc.askedPath {
				t.Errorf("asked the kubelet %q, want %q", got, tc.askedPath)
			}
		})
	}
}
