package apitest

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// badBodies sends malformed and mistyped bodies over plain HTTP: each gets
// a 4xx metav1.Status, and nothing is stored.
func badBodies(t *testing.T, e *env) {
	client, err := rest.HTTPClientFor(e.target.Config)
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(e.target.Config.Host, "/") + "/api/v1/namespaces/" + e.ns
	for _, tc := range []struct {
		name, path, contentType, body, want string
		code                                int
	}{
		{"malformed JSON", "/configmaps", "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"`,
			`the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({\"apiVersion\":\"v1\",\"kind\":\"Con ...)`, 400},
		{"malformed YAML", "/configmaps", "application/yaml",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: [name\n",
			`the object provided is unrecognized (must be of type ConfigMap): yaml: line 3: did not find expected ',' or ']' (61706956657273696f6e3a2076310a6b696e643a20436f6e6669674d6170 ...)`, 400},
		{"wrong apiVersion", "/configmaps", "application/json",
			`{"apiVersion":"storage.k8s.io/v1","kind":"ConfigMap","metadata":{"name":"x"}}`,
			"cannot be handled as a ConfigMap: no kind", 400},
		{"wrong kind", "/configmaps", "application/json",
			`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`,
			`Secret in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`, 400},
		{"unknown resource", "/widgets", "application/json",
			`{"apiVersion":"v1","kind":"Widget","metadata":{"name":"x"}}`, "the server could not find the requested resource", 404},
		{"unknown field, strict", "/configmaps?fieldValidation=Strict", "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"datta":{}}`,
			`ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"datta\"`, 400},
		{"unknown content type", "/configmaps", "text/plain", `name: x`,
			"the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf", 415},
		{"invalid object", "/persistentvolumeclaims", "application/json",
			`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"x"}}`, "spec.accessModes", 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(e.ctx, "POST", base+tc.path, bytes.NewBufferString(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", tc.contentType)
			req.Header.Set("Accept", "application/json")
			resp, err := client.Do(req)
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
		})
	}
	for _, kind := range []string{"configmaps", "persistentvolumeclaims"} {
		var err error
		if kind == "configmaps" {
			_, err = e.cs.CoreV1().ConfigMaps(e.ns).Get(e.ctx, "x", metav1.GetOptions{})
		} else {
			_, err = e.cs.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, "x", metav1.GetOptions{})
		}
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s/x after refused writes: %v, want NotFound", kind, err)
		}
	}
}
