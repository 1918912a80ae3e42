package fakekube

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// serveHTTP serves srv on a loopback port for the test's lifetime and
// returns a client configuration for it.
func serveHTTP(t testing.TB, srv *Server) *rest.Config {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Close() })
	return &rest.Config{Host: "http://" + l.Addr().String(), UserAgent: "http-test"}
}

// TestBadBodiesChangeNothing sends malformed and mistyped bodies: each
// gets a 4xx with a message, and the store's resourceVersion stays put.
func TestBadBodiesChangeNothing(t *testing.T) {
	srv := New(Options{})
	cfg := serveHTTP(t, srv)
	for _, tc := range []struct {
		name, method, path, contentType, body, want string
		code                                        int
	}{
		{"malformed JSON", "POST", "/api/v1/namespaces/default/persistentvolumeclaims", "application/json",
			`{"apiVersion":"v1","kind":"PersistentVolumeClaim",`, "json parse error", 400},
		{"malformed YAML", "POST", "/api/v1/namespaces/default/configmaps", "application/yaml",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: [name\n", "the object provided is unrecognized", 400},
		{"wrong apiVersion", "POST", "/api/v1/namespaces/default/persistentvolumeclaims", "application/json",
			`{"apiVersion":"storage.k8s.io/v1","kind":"PersistentVolumeClaim","metadata":{"name":"x"}}`,
			"cannot be handled as a PersistentVolumeClaim: no kind", 400},
		{"wrong kind", "POST", "/api/v1/namespaces/default/persistentvolumeclaims", "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, "cannot be handled as a PersistentVolumeClaim", 400},
		{"unknown resource", "POST", "/api/v1/namespaces/default/widgets", "application/json",
			`{"apiVersion":"v1","kind":"Widget","metadata":{"name":"x"}}`, "could not find the requested resource", 404},
		{"unknown field, strict", "POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"datta":{}}`, `strict decoding error: unknown field`, 400},
		{"unknown content type", "POST", "/api/v1/namespaces/default/configmaps", "text/plain",
			`name: x`, "unknown format", 415},
		{"invalid object", "POST", "/api/v1/namespaces/default/persistentvolumeclaims", "application/json",
			`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"x"}}`, "spec.accessModes", 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.store.currentRV()
			req, _ := http.NewRequest(tc.method, cfg.Host+tc.path, bytes.NewBufferString(tc.body))
			req.Header.Set("Content-Type", tc.contentType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if !bytes.Contains(body, []byte(tc.want)) {
				t.Errorf("body %s does not say %q", body, tc.want)
			}
			if !bytes.Contains(body, []byte(`"kind":"Status"`)) {
				t.Errorf("body is not a metav1.Status: %s", body)
			}
			if after := srv.store.currentRV(); after != before {
				t.Errorf("resourceVersion moved %s -> %s: the store changed", before, after)
			}
		})
	}
}

// TestCustomResourcesAnswerJSONToProtobufClients: a client that prefers
// protobuf still gets the snapshot kinds, in JSON, as from a real server.
func TestCustomResourcesAnswerJSONToProtobufClients(t *testing.T) {
	cfg := serveHTTP(t, New(Options{}))
	req, _ := http.NewRequest("GET", cfg.Host+"/apis/snapshot.storage.k8s.io/v1/volumesnapshotclasses", nil)
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf, application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("status %d content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if !bytes.Contains(body, []byte(`"kind":"VolumeSnapshotClassList"`)) {
		t.Errorf("body: %s", body)
	}
}
