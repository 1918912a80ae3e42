package realcluster

import (
	"slices"
	"testing"
)

func TestParseWorkloadLine(t *testing.T) {
	for _, tc := range []struct {
		line           string
		ok             bool
		path, claim    string
		wrote          bool
		found, corrupt []string
	}{
		{line: "csisim-workload: /data (claim default/data): wrote marker of pod u2; found 1 earlier marker(s): u1; corrupt: none",
			ok: true, path: "/data", claim: "data", wrote: true, found: []string{"u1"}},
		{line: "csisim-workload: /ro (claim ns/c): read-only, wrote no marker; found 2 earlier marker(s): u1, u2; corrupt: u3, u4",
			ok: true, path: "/ro", claim: "c", found: []string{"u1", "u2"}, corrupt: []string{"u3", "u4"}},
		{line: "csisim-workload: /data (claim default/data): wrote marker of pod u1; found 0 earlier marker(s); corrupt: none",
			ok: true, path: "/data", claim: "data", wrote: true},
		{line: "some other output"},
	} {
		path, d, ok := parseWorkloadLine(tc.line)
		if ok != tc.ok || path != tc.path || d.Claim != tc.claim || d.Wrote != tc.wrote ||
			!slices.Equal(d.Found, tc.found) || !slices.Equal(d.Corrupt, tc.corrupt) {
			t.Errorf("%q: got %v %q %+v", tc.line, ok, path, d)
		}
	}
}
