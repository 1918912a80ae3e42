package fakekube

import (
	"net/http"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/warning"
)

// withWarnings gives the request a recorder for the warnings the
// strategies add (a deprecated annotation, a field to be ignored), sent
// as kube-apiserver sends them: one Warning header each, code 299, agent
// "-", each text once (k8s.io/apiserver pkg/endpoints/filters/warning.go;
// its truncation of very many warnings is left out).
func withWarnings(w http.ResponseWriter, r *http.Request) *http.Request {
	return r.WithContext(warning.WithWarningRecorder(r.Context(), &warningRecorder{header: w.Header(), seen: map[string]bool{}}))
}

type warningRecorder struct {
	header http.Header
	seen   map[string]bool
}

// AddWarning is called by one request's handler goroutine only.
func (r *warningRecorder) AddWarning(agent, text string) {
	if text == "" || r.seen[text] {
		return
	}
	r.seen[text] = true
	if h, err := utilnet.NewWarningHeader(299, agent, text); err == nil {
		r.header.Add("Warning", h)
	}
}
