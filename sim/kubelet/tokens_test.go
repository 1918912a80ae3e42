package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// issueTokens makes the fake API server answer TokenRequests with a token
// naming the service account, the audiences and the time, and counts them.
func (e *env) issueTokens() *int {
	n := 0
	e.client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		n++
		now := e.clock.Now().Truncate(time.Second) // as the API server's
		tr.Status = authenticationv1.TokenRequestStatus{
			Token:               fmt.Sprintf("%s/%s/%v/%s#%d", a.GetNamespace(), ca.(k8stesting.CreateActionImpl).Name, tr.Spec.Audiences, tr.Spec.BoundObjectRef.Name, n),
			ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second)),
		}
		return true, tr, nil
	})
	return &n
}

func tokensOf(t *testing.T, s string) map[string]authenticationv1.TokenRequestStatus {
	t.Helper()
	var out map[string]authenticationv1.TokenRequestStatus
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("tokens %q: %v", s, err)
	}
	return out
}

// A driver's tokenRequests: one token per audience in the volume context,
// kept by the token manager across republishes until 80% of its lifetime
// has passed, then a fresh one.
func TestServiceAccountTokens(t *testing.T) {
	ten := int64(600)
	e := newEnv(t, envOptions{caps: stageCaps(), driver: storagev1.CSIDriverSpec{RequiresRepublish: ptr(true),
		TokenRequests: []storagev1.TokenRequest{{Audience: "vault", ExpirationSeconds: &ten}, {Audience: ""}}}})
	issued := e.issueTokens()
	e.runningPod()
	first := tokensOf(t, e.node.pub[0].GetVolumeContext()[serviceAccountTokensKey])
	if len(first) != 2 || first["vault"].Token != "default/builder/[vault]/app#1" || first[""].Token != "default/builder/[]/app#2" {
		t.Fatalf("tokens %+v", first)
	}
	if got := first["vault"].ExpirationTimestamp.Sub(e.clock.Now()); got > 600*time.Second || got < 590*time.Second {
		t.Errorf("the vault token expires in %v, want its 600 s", got)
	}
	if _, ok := e.node.stage[0].GetVolumeContext()[serviceAccountTokensKey]; ok {
		t.Error("NodeStageVolume got the tokens")
	}
	if _, ok := e.node.pub[0].GetSecrets()[serviceAccountTokensKey]; ok {
		t.Error("the tokens are in the secrets without serviceAccountTokenInSecrets")
	}
	republish := func() map[string]authenticationv1.TokenRequestStatus {
		t.Helper()
		e.k.Resync(context.Background())
		if err := e.sync("default/app"); err != nil {
			t.Fatal(err)
		}
		return tokensOf(t, e.node.pub[len(e.node.pub)-1].GetVolumeContext()[serviceAccountTokensKey])
	}
	// 480 s after it was issued: 80% of the vault token's lifetime, not past it.
	e.clock.SetTime(first["vault"].ExpirationTimestamp.Add(-120 * time.Second))
	if got := republish(); got["vault"].Token != first["vault"].Token || *issued != 2 {
		t.Errorf("republished within 80%% of the lifetime with %q (%d requests), want the cached token", got["vault"].Token, *issued)
	}
	e.clock.Step(time.Second)
	got := republish()
	if got["vault"].Token != "default/builder/[vault]/app#3" || got[""].Token != first[""].Token {
		t.Errorf("after 80%% of its lifetime: %+v, want a fresh vault token and the hour-long one kept", got)
	}
}

// serviceAccountTokenInSecrets moves the tokens to the publish's secrets.
func TestServiceAccountTokensInSecrets(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(), driver: storagev1.CSIDriverSpec{ServiceAccountTokenInSecrets: ptr(true),
		TokenRequests: []storagev1.TokenRequest{{Audience: "vault"}}}})
	e.issueTokens()
	e.runningPod()
	pub := e.node.pub[0]
	if _, ok := pub.GetVolumeContext()[serviceAccountTokensKey]; ok {
		t.Error("the tokens are in the volume context")
	}
	if got := tokensOf(t, pub.GetSecrets()[serviceAccountTokensKey]); got["vault"].Token == "" {
		t.Errorf("secrets %v, want the vault token", pub.GetSecrets())
	}
}

// A token the API server refuses fails SetUp, in the kubelet's words.
func TestServiceAccountTokenRefused(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(), driver: storagev1.CSIDriverSpec{TokenRequests: []storagev1.TokenRequest{{Audience: "vault"}}}})
	err := e.sync("default/app")
	if _, ok := requeuedAfter(err); !ok {
		t.Fatalf("sync = %v, want a retry", err)
	}
	evs := e.events()
	want := `MountVolume.SetUp failed for volume "pv-1" : kubernetes.io/csi: mounter.SetUpAt failed to get service accoount token attributes: `
	if len(evs) != 1 || evs[0].Reason != "FailedMount" || len(evs[0].Message) < len(want) || evs[0].Message[:len(want)] != want {
		t.Fatalf("events %+v, want FailedMount %q…", evs, want)
	}
}
