package fakekube

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestTokenRequest(t *testing.T) {
	_, cs := newClient(t)
	ctx := context.Background()
	sas := cs.CoreV1().ServiceAccounts("default")
	exp := int64(600)
	req := func(uid string) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: &exp,
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "app", UID: typesUID(uid)}}}
	}
	if _, err := sas.CreateToken(ctx, "builder", req(""), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("token of a missing service account: %v, want NotFound", err)
	}
	if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sas.CreateToken(ctx, "builder", req(""), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("token bound to a missing pod: %v, want NotFound", err)
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := sas.CreateToken(ctx, "builder", req(""), metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `cannot bind token for serviceaccount "builder" to pod running with different serviceaccount name.`) {
		t.Fatalf("token for a pod of another service account: %v, want BadRequest", err)
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, "app", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.PodSpec{ServiceAccountName: "builder", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sas.CreateToken(ctx, "builder", req("other-uid"), metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "the UID in the bound object reference (other-uid) does not match the UID in record") {
		t.Fatalf("token bound to another pod's UID: %v, want the conflict", err)
	}
	short := int64(599)
	tooShort := req(string(pod.UID))
	tooShort.Spec.ExpirationSeconds = &short
	if _, err := sas.CreateToken(ctx, "builder", tooShort, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "may not specify a duration less than 10 minutes") {
		t.Fatalf("a 599 s token: %v, want Invalid", err)
	}

	tr, err := sas.CreateToken(ctx, "builder", req(string(pod.UID)), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := sas.CreateToken(ctx, "builder", req(string(pod.UID)), metav1.CreateOptions{})
	if err != nil || again.Status.Token != tr.Status.Token {
		t.Errorf("the same request at the same time gave another token: %v", err)
	}
	if got := tr.Status.ExpirationTimestamp.Sub(tr.CreationTimestamp.Time); got.Seconds() != 600 {
		t.Errorf("expires %v after it was issued, want 600 s", got)
	}
	parts := strings.Split(tr.Status.Token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a JWT", tr.Status.Token)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims tokenClaims
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if claims.Subject != "system:serviceaccount:default:builder" || claims.Audiences[0] != "vault" ||
		claims.Kubernetes.Pod == nil || claims.Kubernetes.Pod.UID != string(pod.UID) || claims.Expiry-claims.IssuedAt != 600 {
		t.Errorf("claims %+v", claims)
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
