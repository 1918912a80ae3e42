package main

import "testing"

func TestSpecFailure(t *testing.T) {
	for _, tc := range []struct{ name, msg, want string }{
		{"gomega error dump",
			"Unexpected error:\n    <*status.Error | 0x1e48>: \n    rpc error: code = Unimplemented desc = not served\n    {\n        s: {\n            s: {Code: 12},\n        },\n    }\noccurred",
			"Unexpected error: rpc error: code = Unimplemented desc = not served occurred"},
		{"expected codes",
			"unexpected error: bad path\nExpected\n    <codes.Code>: 3\nto equal\n    <codes.Code>: 5",
			"unexpected error: bad path Expected 3 to equal 5"},
		{"one line", "path should exist", "path should exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := specFailure(tc.msg); got != tc.want {
				t.Errorf("specFailure = %q, want %q", got, tc.want)
			}
		})
	}
}
