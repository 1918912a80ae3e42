package csiutil

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

func TestFits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity int64
		r        *csi.CapacityRange
		want     bool
	}{
		{"no range", 1, nil, true},
		{"empty range", 0, &csi.CapacityRange{}, true},
		{"exactly required", 10, &csi.CapacityRange{RequiredBytes: 10}, true},
		{"below required", 9, &csi.CapacityRange{RequiredBytes: 10}, false},
		{"above required, no limit", 1 << 40, &csi.CapacityRange{RequiredBytes: 10}, true},
		{"exactly the limit", 20, &csi.CapacityRange{RequiredBytes: 10, LimitBytes: 20}, true},
		{"above the limit", 21, &csi.CapacityRange{RequiredBytes: 10, LimitBytes: 20}, false},
		{"limit only", 5, &csi.CapacityRange{LimitBytes: 4}, false},
	} {
		if got := Fits(tc.capacity, tc.r); got != tc.want {
			t.Errorf("%s: Fits(%d, %v) = %t, want %t", tc.name, tc.capacity, tc.r, got, tc.want)
		}
	}
}

func TestIsEphemeral(t *testing.T) {
	for _, tc := range []struct {
		ctx  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{EphemeralContextKey: "false"}, false},
		{map[string]string{EphemeralContextKey: "True"}, false},
		{map[string]string{EphemeralContextKey: "true"}, true},
	} {
		if got := IsEphemeral(tc.ctx); got != tc.want {
			t.Errorf("IsEphemeral(%v) = %t, want %t", tc.ctx, got, tc.want)
		}
	}
}
