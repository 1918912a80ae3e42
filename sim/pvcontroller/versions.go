package pvcontroller

import (
	"strconv"
	"sync"
)

// newest keeps, for each claim or volume, the newest resourceVersion the
// binder has seen from its informer or written itself. The real
// controller keeps its own caches of claims and volumes for this
// (pkg/controller/volume/persistentvolume/pv_controller_base.go,
// storeObjectUpdate): it stores what each of its writes returned, and a
// sync of an informer's copy older than that is skipped ("Ignoring object
// version") — so an informer that is behind, after an API server outage
// for instance, does not make it act twice on what it already did.
type newest struct {
	mu       sync.Mutex
	versions map[string]uint64
}

// fresh says whether an informer's copy at resourceVersion rv of key is
// not older than what the binder knows, and if so remembers it. The same
// version passes: a resync syncs it again.
func (n *newest) fresh(key, rv string) bool {
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return true // not a version this server makes: nothing to compare
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if v < n.versions[key] {
		return false
	}
	if n.versions == nil {
		n.versions = map[string]uint64{}
	}
	n.versions[key] = v
	return true
}

// wrote remembers the version the binder's own write of key returned.
func (n *newest) wrote(key, rv string) { n.fresh(key, rv) }

// forget drops a key whose object is gone, as the real controller's
// delete handlers do.
func (n *newest) forget(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.versions, key)
}
