package kubelet

// Service account tokens for drivers that ask for them
// (CSIDriver.spec.tokenRequests) — models kubernetes
// pkg/kubelet/token/token_manager.go and pkg/volume/csi/csi_mounter.go
// (podServiceAccountTokenAttrs).

// Service account tokens for CSI drivers that ask for them
// (CSIDriver spec.tokenRequests): at each NodePublishVolume the kubelet
// requests a token of the pod's service account for each audience, bound
// to the pod, and passes them as JSON — audience → {token,
// expirationTimestamp} — under csi.storage.k8s.io/serviceAccount.tokens:
// in the volume context, or in the call's secrets when the CSIDriver has
// serviceAccountTokenInSecrets (kubernetes pkg/volume/csi/csi_mounter.go,
// podServiceAccountTokenAttrs). The tokens come from the kubelet's token
// manager (kubernetes pkg/kubelet/token/token_manager.go), which keeps each
// until 80% of its lifetime (or 24 hours) has passed, so a
// requiresRepublish driver gets the same token at each republish until then,
// and a fresh one after. (The real manager also refreshes up to 10 s
// earlier, at random; left out, so that a seed gives one run.)

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// serviceAccountTokensKey is where the tokens go.
const serviceAccountTokensKey = "csi.storage.k8s.io/serviceAccount.tokens"

// tokenMaxTTL: a cached token older than this is requested again.
const tokenMaxTTL = 24 * time.Hour

// tokenCache is the token manager's cache, by request.
type tokenCache struct {
	mu      sync.Mutex
	entries map[string]cachedToken
}

type cachedToken struct {
	podUID types.UID
	tr     *authenticationv1.TokenRequest
}

// clear forgets every token, as a new kubelet process starts afresh.
func (c *tokenCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = nil
}

// forgetPod drops the tokens bound to a pod that is gone.
func (c *tokenCache) forgetPod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, e := range c.entries {
		if e.podUID == uid {
			delete(c.entries, key)
		}
	}
}

// needsRefresh: the token has lived 80% of its lifetime, or 24 hours.
func needsRefresh(tr *authenticationv1.TokenRequest, now time.Time) bool {
	if tr.Spec.ExpirationSeconds == nil {
		return true
	}
	lifetime := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	exp := tr.Status.ExpirationTimestamp.Time
	issued := exp.Add(-lifetime)
	return now.After(issued.Add(tokenMaxTTL)) || now.After(exp.Add(-lifetime/5))
}

// serviceAccountToken returns the token manager's token for the request:
// the cached one while it is fresh, else a new one from the API server
// (the cached one, while unexpired, if that fails).
func (k *Kubelet) serviceAccountToken(ctx context.Context, pod *corev1.Pod, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	key := fmt.Sprintf("%q/%q/%v/%d/%s", sa, pod.Namespace, tr.Spec.Audiences, *tr.Spec.ExpirationSeconds, tr.Spec.BoundObjectRef.UID)
	now := k.clock.Now()
	k.tokens.mu.Lock()
	cached, ok := k.tokens.entries[key]
	k.tokens.mu.Unlock()
	if ok && !needsRefresh(cached.tr, now) {
		return cached.tr, nil
	}
	fresh, err := k.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
	if err != nil {
		if ok && now.Before(cached.tr.Status.ExpirationTimestamp.Time) {
			return cached.tr, nil
		}
		return nil, err
	}
	k.tokens.mu.Lock()
	if k.tokens.entries == nil {
		k.tokens.entries = map[string]cachedToken{}
	}
	k.tokens.entries[key] = cachedToken{podUID: pod.UID, tr: fresh}
	k.tokens.mu.Unlock()
	return fresh, nil
}

// serviceAccountTokens returns the tokens a driver's tokenRequests ask for
// as the JSON the kubelet passes (nil when it asks for none), and whether
// they go in the secrets rather than the volume context.
func (k *Kubelet) serviceAccountTokens(ctx context.Context, pod *corev1.Pod, driver string) (string, bool, error) {
	drv, err := k.drivers.Get(driver)
	if err != nil || len(drv.Spec.TokenRequests) == 0 {
		return "", false, nil
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default" // what the ServiceAccount admission plugin sets
	}
	out := map[string]authenticationv1.TokenRequestStatus{}
	for _, req := range drv.Spec.TokenRequests {
		audiences := []string{}
		if req.Audience != "" {
			audiences = []string{req.Audience}
		}
		exp := int64(3600) // the API's default, which the kubelet's cache keys on
		if req.ExpirationSeconds != nil {
			exp = *req.ExpirationSeconds
		}
		tr, err := k.serviceAccountToken(ctx, pod, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences: audiences, ExpirationSeconds: &exp,
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
		}})
		if err != nil {
			return "", false, err
		}
		out[req.Audience] = tr.Status
	}
	tokens, err := json.Marshal(out)
	if err != nil {
		return "", false, err
	}
	inSecrets := drv.Spec.ServiceAccountTokenInSecrets != nil && *drv.Spec.ServiceAccountTokenInSecrets
	return string(tokens), inSecrets, nil
}

// withServiceAccountTokens adds the driver's tokens to a publish's volume
// context or secrets (new maps; the PV's own are not touched).
func (k *Kubelet) withServiceAccountTokens(ctx context.Context, pod *corev1.Pod, driver string, volumeContext, secrets map[string]string) (map[string]string, map[string]string, error) {
	tokens, inSecrets, err := k.serviceAccountTokens(ctx, pod, driver)
	if err != nil {
		return nil, nil, csiLog("mounter.SetUpAt failed to get service accoount token attributes: %v", err)
	}
	if tokens == "" {
		return volumeContext, secrets, nil
	}
	add := func(m map[string]string) map[string]string {
		out := make(map[string]string, len(m)+1)
		for key, v := range m {
			out[key] = v
		}
		out[serviceAccountTokensKey] = tokens
		return out
	}
	if inSecrets {
		return volumeContext, add(secrets), nil
	}
	return add(volumeContext), secrets, nil
}
