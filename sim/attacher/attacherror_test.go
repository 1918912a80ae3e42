package attacher

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	testclock "k8s.io/utils/clock/testing"
)

// The sidecar keeps a gRPC error's code with an attach error, and has none
// for an error of its own.
func TestAttachErrorCode(t *testing.T) {
	a := &Attacher{clock: testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	tests := []struct {
		name string
		err  error
		want any
	}{
		{"driver's error", status.Error(codes.ResourceExhausted, "full"), int32(codes.ResourceExhausted)},
		{"timeout", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), int32(codes.DeadlineExceeded)},
		{"sidecar's own error", errors.New(`PersistentVolume "pv" is marked for deletion`), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := a.attachError(tc.err)["errorCode"]
			if tc.want == nil && ok || tc.want != nil && got != tc.want {
				t.Errorf("errorCode = %v (present %t), want %v", got, ok, tc.want)
			}
			if _, ok := a.volumeError(tc.err)["errorCode"]; ok {
				t.Error("a detach error has an errorCode")
			}
		})
	}
}
