package fakekube

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The TokenRequest API's limits and defaults (kubernetes
// pkg/apis/authentication/v1/defaults.go, validation/validation.go).
const (
	defaultTokenExpirationSeconds = 3600
	minTokenExpirationSeconds     = 600
	maxTokenExpirationSeconds     = 1 << 32
	// tokenIssuer is the issuer a cluster's service account tokens name
	// by default (kube-apiserver --service-account-issuer as kubeadm and
	// kind set it).
	tokenIssuer = "https://kubernetes.default.svc.cluster.local"
)

// serveTokenRequest answers POST serviceaccounts/<name>/token, as the real
// server's TokenRequest storage does (kubernetes
// pkg/registry/core/serviceaccount/storage/token.go): the service account
// must exist, a bound pod must exist, run as that service account and have
// the UID given, the expiration is
// 3600 s by default and at least 10 minutes. The token is JWT-shaped with
// the real claims, made from the request and the clock so that a run
// gives the same tokens every time; its "signature" is a hash, not a
// signature: nothing in a simulated cluster verifies it.
func (s *Server) serveTokenRequest(w http.ResponseWriter, r *http.Request, req request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var tr authenticationv1.TokenRequest
	if err := decodeInto(r, body, &tr); err != nil {
		writeError(w, err)
		return
	}
	if tr.Spec.ExpirationSeconds == nil {
		exp := int64(defaultTokenExpirationSeconds)
		tr.Spec.ExpirationSeconds = &exp
	}
	gk := schema.GroupKind{Group: authenticationv1.GroupName, Kind: "TokenRequest"}
	expPath := field.NewPath("spec", "expirationSeconds")
	switch exp := *tr.Spec.ExpirationSeconds; {
	case exp < minTokenExpirationSeconds:
		writeError(w, apierrors.NewInvalid(gk, req.name, field.ErrorList{field.Invalid(expPath, exp, "may not specify a duration less than 10 minutes")}))
		return
	case exp > maxTokenExpirationSeconds:
		writeError(w, apierrors.NewInvalid(gk, req.name, field.ErrorList{field.TooLong(expPath, exp, maxTokenExpirationSeconds)}))
		return
	}
	saObj, err := s.store.get(req.res, req.namespace, req.name)
	if err != nil {
		writeError(w, err)
		return
	}
	sa := saObj.(*corev1.ServiceAccount)
	claims := tokenClaims{Issuer: tokenIssuer, Audiences: tr.Spec.Audiences}
	if len(claims.Audiences) == 0 {
		claims.Audiences = []string{tokenIssuer} // the server's --api-audiences default
	}
	claims.Subject = fmt.Sprintf("system:serviceaccount:%s:%s", req.namespace, req.name)
	claims.Kubernetes.Namespace = req.namespace
	claims.Kubernetes.ServiceAccount = tokenRef{Name: sa.Name, UID: string(sa.UID)}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		if ref.Kind != "Pod" || ref.APIVersion != "v1" {
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind))))
			return
		}
		podObj, err := s.store.get(s.reg.byGVR[coreV1.WithResource("pods")], req.namespace, ref.Name)
		if err != nil {
			writeError(w, err)
			return
		}
		pod := podObj.(*corev1.Pod)
		podSA := pod.Spec.ServiceAccountName
		if podSA == "" {
			podSA = "default" // what the ServiceAccount admission plugin sets
		}
		if podSA != req.name {
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", req.name)))
			return
		}
		if ref.UID != "" && ref.UID != pod.UID {
			writeError(w, apierrors.NewConflict(schema.GroupResource{Resource: "Pod"}, ref.Name,
				fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID)))
			return
		}
		claims.Kubernetes.Pod = &tokenRef{Name: pod.Name, UID: string(pod.UID)}
		if pod.Spec.NodeName != "" {
			claims.Kubernetes.Node = &tokenRef{Name: pod.Spec.NodeName}
		}
	}
	now := s.clock.Now().Truncate(time.Second)
	exp := now.Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second)
	claims.IssuedAt, claims.NotBefore, claims.Expiry = now.Unix(), now.Unix(), exp.Unix()
	token, err := fakeJWT(claims)
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	out := tr.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{APIVersion: authenticationv1.SchemeGroupVersion.String(), Kind: "TokenRequest"}
	out.Name, out.Namespace = req.name, req.namespace
	out.CreationTimestamp = metav1.NewTime(now)
	out.Spec.Audiences = claims.Audiences
	out.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(exp)}
	writeJSON(w, http.StatusCreated, out)
}

// tokenClaims are a service account token's claims (kubernetes
// pkg/serviceaccount/claims.go).
type tokenClaims struct {
	Audiences  []string `json:"aud"`
	Expiry     int64    `json:"exp"`
	IssuedAt   int64    `json:"iat"`
	Issuer     string   `json:"iss"`
	Kubernetes struct {
		Namespace      string    `json:"namespace"`
		Node           *tokenRef `json:"node,omitempty"`
		Pod            *tokenRef `json:"pod,omitempty"`
		ServiceAccount tokenRef  `json:"serviceaccount"`
	} `json:"kubernetes.io"`
	NotBefore int64  `json:"nbf"`
	Subject   string `json:"sub"`
}

type tokenRef struct {
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
}

// fakeJWT encodes claims as a JWT whose third part is a hash of the
// first two.
func fakeJWT(claims tokenClaims) (string, error) {
	enc := base64.RawURLEncoding
	header, err := json.Marshal(map[string]string{"alg": "RS256", "kid": "csisim"})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	sum := sha256.Sum256([]byte(signed))
	return signed + "." + enc.EncodeToString(sum[:]), nil
}
