package scenarios

import (
	"context"
	"fmt"
)

// volumeKinds are the cluster-scoped kinds a run's claims, attachments
// and snapshots make objects of, outside its namespace.
var volumeKinds = []string{"persistentvolumes", "volumeattachments", "volumesnapshotcontents", "volumegroupsnapshotcontents"}

// othersObjects are the UIDs of the objects of volumeKinds on a shared
// cluster (Runner.Restore) before the run began: another run's volume
// still being deleted, a volume of the cluster's own. A step that looks
// at all objects of a kind (wait: {object: persistentvolumes, count: 0})
// means the run's: on the simulator the cluster is the run's alone, on a
// shared cluster these are left out of what it sees (ownList). A kind the
// server does not serve (no snapshot CRDs) has none.
func othersObjects(ctx context.Context, objects objectStore) (map[string]bool, error) {
	uids := map[string]bool{}
	for _, kind := range volumeKinds {
		if _, err := objects.clusterScoped(kind); err != nil {
			continue // not served here
		}
		list, err := objects.list(ctx, kind, "", "")
		if err != nil {
			return nil, fmt.Errorf("list the %s there before the run: %w", kind, err)
		}
		for _, uid := range itemUIDs(list) {
			uids[uid] = true
		}
	}
	return uids, nil
}

func itemUIDs(list map[string]any) []string {
	items, _ := list["items"].([]any)
	var uids []string
	for _, it := range items {
		o, _ := it.(map[string]any)
		meta, _ := o["metadata"].(map[string]any)
		if uid, _ := meta["uid"].(string); uid != "" {
			uids = append(uids, uid)
		}
	}
	return uids
}

// ownList is list without the items whose UIDs are in others.
func ownList(list map[string]any, others map[string]bool) map[string]any {
	items, ok := list["items"].([]any)
	if !ok || len(others) == 0 {
		return list
	}
	own := make([]any, 0, len(items))
	for _, it := range items {
		o, _ := it.(map[string]any)
		meta, _ := o["metadata"].(map[string]any)
		if uid, _ := meta["uid"].(string); uid != "" && others[uid] {
			continue
		}
		own = append(own, it)
	}
	out := make(map[string]any, len(list))
	for k, v := range list {
		out[k] = v
	}
	out["items"] = own
	return out
}

// sharedView is what a run on a shared cluster leaves out of its view:
// the volume objects that are not its own, the workers that are not its
// nodes.
type sharedView struct {
	others  map[string]bool
	confine []string
}

// sharedClusterView is the view of a run on a shared cluster
// (Runner.Restore, not simulated); empty for any other.
func (r *Runner) sharedClusterView(ctx context.Context, s *Scenario, objects objectStore, nodes map[string]string) (sharedView, error) {
	var v sharedView
	if _, simulated := r.Backend.(Simulated); !r.Restore || simulated {
		return v, nil
	}
	var err error
	if v.others, err = othersObjects(ctx, objects); err != nil {
		return v, err
	}
	v.confine, err = r.confinedTo(ctx, s, nodes)
	return v, err
}

// confinedTo are the backend's workers that stand for the scenario's
// nodes when the backend has more workers than the scenario has nodes;
// nil when it has not. A scenario of one node (cluster.nodes: [node-1],
// the default) is a cluster of one node: its pods run there, as on the
// simulator, and what it expects of node-1 (an event naming it, its
// volumesInUse after its kubelet restarts, two pods sharing a
// ReadWriteOnce claim) holds. On a kind cluster of two workers the real
// scheduler placed such pods on either.
func (r *Runner) confinedTo(ctx context.Context, s *Scenario, nodes map[string]string) ([]string, error) {
	nn, ok := r.Backend.(NodeNamer)
	if !ok || len(nodes) == 0 {
		return nil, nil
	}
	workers, err := nn.Workers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the backend's workers: %w", err)
	}
	if len(nodes) >= len(workers) {
		return nil, nil
	}
	want := s.Cluster.Nodes
	if len(want) == 0 {
		want = defaultNodes
	}
	confine := make([]string, 0, len(want))
	for _, n := range want {
		confine = append(confine, nodes[n])
	}
	return confine, nil
}
