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
