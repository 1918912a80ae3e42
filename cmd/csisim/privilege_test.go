package main

import (
	"errors"
	"testing"
)

// TestCheckRoot: a driver that mounts for real is refused to a user other
// than root, with the fix; a mock driver, or root, runs.
func TestCheckRoot(t *testing.T) {
	tests := []struct {
		realMounts bool
		euid       int
		want       error
	}{
		{true, 1000, errNeedsRoot},
		{true, 0, nil},
		{false, 1000, nil},
		{false, 0, nil},
	}
	for _, tt := range tests {
		if err := checkRoot(tt.realMounts, tt.euid); !errors.Is(err, tt.want) {
			t.Errorf("checkRoot(%v, %d) = %v, want %v", tt.realMounts, tt.euid, err, tt.want)
		}
	}
}
