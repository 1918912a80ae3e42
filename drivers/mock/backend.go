package mock

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Backend is the storage system behind one or more mock drivers: volumes,
// capacity, which node each volume is controller-published to, and what each
// node has staged and published. A controller driver and node drivers that
// share a Backend see each other's work, as plugins of one real storage
// system do; drivers that do not share one know only what they did
// themselves. It is safe for concurrent use.
type Backend struct {
	mu sync.Mutex
	// capacity is the total bytes volumes may take; 0 means unlimited.
	capacity int64
	used     int64
	volumes  map[string]*volume
	// byName maps a CreateVolume name to the volume ID it was given, so
	// that a retried create finds the volume it made.
	byName map[string]string
	nodes  map[string]*nodeState
	// controllers counts the drivers serving the controller service; while
	// there are none, node drivers cannot know which volumes exist.
	controllers int
	// attach says whether the controller has PUBLISH_UNPUBLISH_VOLUME;
	// only meaningful when controllers > 0.
	attach bool
}

// volume is one provisioned volume.
type volume struct {
	id, name      string
	capacityBytes int64
	// block is whether the volume was created for block access.
	block bool
	// published is the controller-publish record per node ID.
	published map[string]*controllerPub
	// mutable are the mutable parameters it was created or last modified
	// with.
	mutable map[string]string
}

type controllerPub struct {
	readonly bool
	mode     string
	device   string
}

// nodeState is what one node has done with volumes.
type nodeState struct {
	// registered: a node driver serves this node, so the controller may
	// publish to it and its volume limit is known.
	registered bool
	maxVolumes int64
	staged     map[string]*stageRec
	// published maps volume ID to target path to record.
	published map[string]map[string]*publishRec
}

type stageRec struct {
	path  string
	mode  string
	block bool
}

type publishRec struct {
	staging  string
	readonly bool
	mode     string
	block    bool
}

// NewBackend returns an empty backend that can hold capacity bytes of
// volumes; 0 means unlimited.
func NewBackend(capacity int64) *Backend {
	return &Backend{
		capacity: capacity,
		volumes:  map[string]*volume{},
		byName:   map[string]string{},
		nodes:    map[string]*nodeState{},
	}
}

// attachController records a driver serving the controller service.
// Controllers sharing a backend must agree on PUBLISH_UNPUBLISH_VOLUME, or
// node drivers could not tell whether to expect controller publishing.
func (b *Backend) attachController(attach bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.controllers > 0 && b.attach != attach {
		return fmt.Errorf("shared backend: another controller has PUBLISH_UNPUBLISH_VOLUME=%t, this one %t", b.attach, attach)
	}
	b.controllers++
	b.attach = attach
	return nil
}

// registerNode records a driver serving the node service for nodeID. A node
// plugin that restarts registers again, with its possibly new limit.
func (b *Backend) registerNode(nodeID string, maxVolumes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.node(nodeID)
	n.registered = true
	n.maxVolumes = maxVolumes
}

// node returns the state of nodeID, creating it; the caller holds mu.
func (b *Backend) node(nodeID string) *nodeState {
	n, ok := b.nodes[nodeID]
	if !ok {
		n = &nodeState{staged: map[string]*stageRec{}, published: map[string]map[string]*publishRec{}}
		b.nodes[nodeID] = n
	}
	return n
}

// knowsNodes reports whether any node driver registered, which makes the
// controller refuse to publish to nodes it has not heard of; the caller
// holds mu.
func (b *Backend) knowsNodes() bool {
	for _, n := range b.nodes {
		if n.registered {
			return true
		}
	}
	return false
}

// knowsVolumes reports whether a controller shares this backend, which makes
// node calls for unknown volumes NotFound; the caller holds mu.
func (b *Backend) knowsVolumes() bool { return b.controllers > 0 }

// attachRequired reports whether node drivers must see a controller
// publish before staging; the caller holds mu.
func (b *Backend) attachRequired() bool { return b.controllers > 0 && b.attach }

// publishedTo counts the volumes controller-published to nodeID; the caller
// holds mu.
func (b *Backend) publishedTo(nodeID string) int64 {
	var n int64
	for _, v := range b.volumes {
		if _, ok := v.published[nodeID]; ok {
			n++
		}
	}
	return n
}

// VolumeInfo is what a backend knows about one volume, for tests and
// reports.
type VolumeInfo struct {
	ID            string
	Name          string
	CapacityBytes int64
	// PublishedNodes are the nodes the volume is controller-published
	// to, sorted.
	PublishedNodes []string
	// StagedOn maps node ID to staging path.
	StagedOn map[string]string
	// PublishedOn maps node ID to the sorted target paths.
	PublishedOn map[string][]string
}

// Volumes returns every volume, sorted by ID.
func (b *Backend) Volumes() []VolumeInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := slices.Sorted(maps.Keys(b.volumes))
	out := make([]VolumeInfo, 0, len(ids))
	for _, id := range ids {
		out = append(out, b.info(id))
	}
	return out
}

// Volume returns one volume, or false if it does not exist.
func (b *Backend) Volume(id string) (VolumeInfo, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.volumes[id]; !ok {
		return VolumeInfo{}, false
	}
	return b.info(id), true
}

// info describes a volume; the caller holds mu and id exists.
func (b *Backend) info(id string) VolumeInfo {
	v := b.volumes[id]
	vi := VolumeInfo{
		ID:             v.id,
		Name:           v.name,
		CapacityBytes:  v.capacityBytes,
		PublishedNodes: slices.Sorted(maps.Keys(v.published)),
		StagedOn:       map[string]string{},
		PublishedOn:    map[string][]string{},
	}
	for nodeID, n := range b.nodes {
		if s, ok := n.staged[id]; ok {
			vi.StagedOn[nodeID] = s.path
		}
		if targets := n.published[id]; len(targets) > 0 {
			vi.PublishedOn[nodeID] = slices.Sorted(maps.Keys(targets))
		}
	}
	return vi
}

// Usage reports the bytes taken by volumes and the total capacity (0 for
// unlimited).
func (b *Backend) Usage() (used, capacity int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.capacity
}
