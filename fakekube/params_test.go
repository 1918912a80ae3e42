package fakekube

import (
	"encoding/base64"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestContinueTokens: fakekube never pages a list, so a well-formed
// continue token names a list it cannot continue (410, as the real server
// answers one whose resourceVersion was compacted); a malformed one is a
// bad request.
func TestContinueTokens(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, token string
		code        int32
	}{
		{"well-formed", enc(`{"v":"meta.k8s.io/v1","rv":5,"start":"a"}`), 410},
		{"not base64", "bogus", 400},
		{"not JSON", enc("notjson"), 400},
		{"another version", enc(`{"v":"x"}`), 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkReadParams(readList, map[string][]string{"continue": {tc.token}})
			var status apierrors.APIStatus
			if s, ok := err.(apierrors.APIStatus); ok {
				status = s
			}
			if status == nil || status.Status().Code != tc.code {
				t.Errorf("continue=%s: %v, want %d", tc.token, err, tc.code)
			}
		})
	}
	if err := checkReadParams(readList, map[string][]string{"limit": {"5"}, "resourceVersion": {"12"}}); err != nil {
		t.Errorf("good parameters refused: %v", err)
	}
}
