package apitest

import (
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// tokenRequests: the serviceaccounts/token subresource the kubelet uses for
// a CSIDriver's tokenRequests — the service account and the bound pod
// must exist (with the UID given), the expiration is at least 10 minutes,
// and the token expires when asked.
func tokenRequests(t *testing.T, e *env) {
	sas := e.cs.CoreV1().ServiceAccounts(e.ns)
	req := func(uid types.UID, seconds int64) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: &seconds,
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "app", UID: uid}}}
	}
	if _, err := sas.CreateToken(e.ctx, "builder", req("", 600), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("token of a missing service account: %v, want NotFound", err)
	}
	if _, err := sas.Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The pod runs as the service account (which must exist first).
	p := unscheduledPod(e.ns, "app")
	p.Spec.ServiceAccountName = "builder"
	pod, err := e.cs.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sas.CreateToken(e.ctx, "builder", req("00000000-0000-0000-0000-000000000000", 600), metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "the UID in the bound object reference (00000000-0000-0000-0000-000000000000) does not match the UID in record") {
		t.Errorf("token bound to another UID: %v, want the Conflict", err)
	}
	_, err = sas.CreateToken(e.ctx, "builder", req(pod.UID, 599), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "may not specify a duration less than 10 minutes") {
		t.Errorf("a 599 s token: %v, want Invalid", err)
	}
	tr, err := sas.CreateToken(e.ctx, "builder", req(pod.UID, 600), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(tr.Status.Token, ".") != 2 {
		t.Errorf("token %q is not a JWT", tr.Status.Token)
	}
	if left := time.Until(tr.Status.ExpirationTimestamp.Time); left > 601*time.Second || left < 0 {
		t.Errorf("the token expires in %v, want at most 600 s", left)
	}
}
