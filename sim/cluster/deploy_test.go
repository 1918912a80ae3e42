package cluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestPluginChanges: the driver is registered for a node plugin pod that
// starts, unregistered for one that goes, and both, in that order, for a
// pod that replaced the registered one (a rolling update seen only once
// both pods changed), whose old plugin's socket went with its pod.
func TestPluginChanges(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		registered, running  types.UID
		unregister, register bool
	}{
		{"nothing runs", "", "", false, false},
		{"a pod starts", "", "pod-1", false, true},
		{"the pod still runs", "pod-1", "pod-1", false, false},
		{"the pod goes", "pod-1", "", true, false},
		{"another pod replaced it", "pod-1", "pod-2", true, true},
	} {
		u, r := pluginChanges(tc.registered, tc.running)
		if u != tc.unregister || r != tc.register {
			t.Errorf("%s: unregister %t, register %t; want %t, %t", tc.name, u, r, tc.unregister, tc.register)
		}
	}
}
