package hostpath

import (
	"slices"
	"testing"
)

// The SELinux options a kubelet on an SELinux node sends are mounted with
// only where the kernel has SELinux; the other flags always.
func TestHostMountOptions(t *testing.T) {
	const label = `context="system_u:object_r:container_file_t:s0:c1,c2"`
	tests := []struct {
		name    string
		flags   []string
		seLinux bool
		want    []string
	}{
		{"none", nil, false, nil},
		{"no SELinux option", []string{"noatime", "nodev"}, false, []string{"noatime", "nodev"}},
		{"context without SELinux", []string{"noatime", label}, false, []string{"noatime"}},
		{"every SELinux option", []string{"fscontext=a", "defcontext=b", "rootcontext=c", label}, false, []string{}},
		{"context with SELinux", []string{"noatime", label}, true, []string{"noatime", label}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.flags)
			got := hostMountOptions(in, tc.seLinux)
			if !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("options %q, want %q", got, tc.want)
			}
			if !slices.Equal(in, tc.flags) {
				t.Errorf("the request's flags were changed: %q", in)
			}
		})
	}
}
