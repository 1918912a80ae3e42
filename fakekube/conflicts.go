package fakekube

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RefuseConflicting makes the server answer the next n writes of the
// client actor (its user agent, as Write.Actor names it) that carry a
// resourceVersion with 409 Conflict, in the real API server's words:
//
//	Operation cannot be fulfilled on <resource> "<name>": the object has
//	been modified; please apply your changes to the latest version and try again
//
// — what a client sees when someone else wrote the object since it read
// it. Only such writes can meet a conflict on a real server: an update
// whose object has metadata.resourceVersion, a patch that sets it.
// Creates, deletes, bindings and patches without a resourceVersion are
// applied there against the current object (the registry's
// GuaranteedUpdate retries internally), so they are not refused and not
// counted. Calling it again replaces the count; 0 ends the refusals.
// Options.OnRefused hears of each refused write.
func (s *Server) RefuseConflicting(actor string, n int) {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	if n <= 0 {
		delete(s.store.refusals, actor)
		return
	}
	s.store.refusals[actor] = n
}

// PendingRefusals is how many of actor's writes RefuseConflicting will
// still refuse.
func (s *Server) PendingRefusals(actor string) int {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	return s.store.refusals[actor]
}

// refuseLocked returns the conflict for a write that carries a
// resourceVersion when actor has refusals left, and reports it.
func (s *store) refuseLocked(actor, verb string, res *resource, namespace, name, subresource string) error {
	left := s.refusals[actor]
	if left == 0 {
		return nil
	}
	if left == 1 {
		delete(s.refusals, actor)
	} else {
		s.refusals[actor] = left - 1
	}
	err := conflict(res, name)
	if s.onRefused != nil {
		s.onRefused(Write{Actor: actor, Verb: verb, Resource: res.gvr.Resource, GVR: res.gvr, Kind: res.kind,
			Namespace: namespace, Name: name, Subresource: subresource}, err)
	}
	return err
}

// patchSetsResourceVersion reports whether a patch carries
// metadata.resourceVersion, which makes it conditional on the object not
// having changed: a merge or strategic merge patch that sets it, or a JSON
// patch with an operation on it.
func patchSetsResourceVersion(pt types.PatchType, patch []byte) bool {
	switch pt {
	case types.JSONPatchType:
		var ops []struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(patch, &ops) != nil {
			return false
		}
		for _, op := range ops {
			if op.Path == "/metadata/resourceVersion" {
				return true
			}
		}
		return false
	case types.MergePatchType, types.StrategicMergePatchType:
		var p struct {
			Metadata *metav1.ObjectMeta `json:"metadata"`
		}
		return json.Unmarshal(patch, &p) == nil && p.Metadata != nil && p.Metadata.ResourceVersion != ""
	}
	return false
}
