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

func TestIsSingleNode(t *testing.T) {
	for mode, want := range map[csi.VolumeCapability_AccessMode_Mode]bool{
		csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER:        true,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY:   true,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER: true,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:  true,
		csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY:    false,
		csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER:   false,
		csi.VolumeCapability_AccessMode_UNKNOWN:                   false,
	} {
		if got := IsSingleNode(mode); got != want {
			t.Errorf("IsSingleNode(%s) = %t, want %t", mode, got, want)
		}
	}
}

func TestModeFromName(t *testing.T) {
	for _, mode := range []csi.VolumeCapability_AccessMode_Mode{
		csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
		csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER,
	} {
		if got := ModeFromName(mode.String()); got != mode {
			t.Errorf("ModeFromName(%q) = %s, want %s", mode.String(), got, mode)
		}
	}
	if got := ModeFromName("no such mode"); got != csi.VolumeCapability_AccessMode_UNKNOWN {
		t.Errorf("ModeFromName of an unknown name = %s, want UNKNOWN", got)
	}
}

func TestCheckMutableParameters(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"none", nil, ""},
		{"both", map[string]string{"iops": "3000", "throughput": "125"}, ""},
		{"unknown key", map[string]string{"iops": "3000", "tier": "gold"}, `mutable parameter "tier" is not supported (supported: iops, throughput)`},
		{"not a number", map[string]string{"iops": "fast"}, `mutable parameter iops="fast": want a positive integer`},
		{"zero", map[string]string{"throughput": "0"}, `mutable parameter throughput="0": want a positive integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckMutableParameters(tc.params)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("CheckMutableParameters(%v) = %q, want %q", tc.params, got, tc.want)
			}
		})
	}
}
