package fakekube

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// streamingSubresources are the pods' subresources a real API server
// answers by streaming to the pod's kubelet (kubectl exec, attach,
// port-forward). csisim's kubelets run no container processes, so there
// is nothing to stream to: the server refuses them by name, rather than
// answering NotFound for a pod that exists.
var streamingSubresources = map[string]string{
	"exec":        "kubectl exec",
	"attach":      "kubectl attach",
	"portforward": "kubectl port-forward",
}

// streamingNotSupported refuses a streaming subresource of a pod: NotFound
// if the pod does not exist (as the real server), else 405 with a message
// that says why.
func (s *Server) streamingNotSupported(res *resource, namespace, name, sub string) error {
	if _, err := s.store.get(res, namespace, name); err != nil {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed,
		Reason:  metav1.StatusReasonMethodNotAllowed,
		Details: &metav1.StatusDetails{Name: name, Kind: res.gvr.Resource + "/" + sub},
		Message: fmt.Sprintf("pods/%s (%s) is not supported by csisim serve: pod %q has no running container to connect to "+
			"(csisim's kubelets simulate containers; use kubectl logs for what its workload printed)", sub, streamingSubresources[sub], name)}}
}
