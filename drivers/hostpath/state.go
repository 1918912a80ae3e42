package hostpath

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// stateFileName is the file in the state directory that holds a process's
// state.
const stateFileName = "state.json"

// state is everything one plugin process remembers across restarts. A
// controller fills Volumes and Snapshots, a node fills Staged and Published;
// a process in ModeAll fills all four.
type state struct {
	// Volumes maps volume ID to what CreateVolume made.
	Volumes map[string]*volumeRecord `json:"volumes,omitempty"`
	// Snapshots maps snapshot ID to what CreateSnapshot made, and the
	// members of group snapshots.
	Snapshots map[string]*snapshotRecord `json:"snapshots,omitempty"`
	// GroupSnapshots maps group snapshot ID to what
	// CreateVolumeGroupSnapshot made (groupcontroller.go).
	GroupSnapshots map[string]*groupSnapshotRecord `json:"groupSnapshots,omitempty"`
	// Staged maps volume ID to where NodeStageVolume mounted it.
	Staged map[string]*stageRecord `json:"staged,omitempty"`
	// Published maps volume ID and target path to a NodePublishVolume mount.
	Published map[string]map[string]*publishRecord `json:"published,omitempty"`
	// Ephemeral holds the IDs of the CSI ephemeral volumes this node
	// plugin made on NodePublishVolume (ephemeral.go).
	Ephemeral map[string]bool `json:"ephemeral,omitempty"`
}

// volumeRecord is one created volume as the controller knows it.
type volumeRecord struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Kind is empty in state written before volume kinds existed, which
	// means a directory; use kind().
	Kind          volumeKind `json:"kind,omitempty"`
	CapacityBytes int64      `json:"capacityBytes"`
	// Zone is the capacity pool, and the topology, the volume was placed
	// in; empty when nodes report no zone.
	Zone string `json:"zone,omitempty"`
	// Source is the snapshot or volume the volume was filled from.
	Source *contentSource `json:"source,omitempty"`
	// LoopDevice is the loop device a block volume was last attached to.
	// It is a hint for humans reading the state: the kernel's list of loop
	// devices is what counts, since a device can vanish (reboot) or be
	// attached without a record (crash between attach and save).
	LoopDevice string `json:"loopDevice,omitempty"`
	// Parameters are the CreateVolume parameters the driver does not know
	// itself; they are passed on in the volume context.
	Parameters map[string]string `json:"parameters,omitempty"`
	// MutableParameters are the last mutable parameters the volume was
	// created or modified with (csiutil.CheckMutableParameters). A
	// repeated CreateVolume does not compare them: they may have changed
	// since, by ControllerModifyVolume.
	MutableParameters map[string]string `json:"mutableParameters,omitempty"`
	// PublishedNodes maps node ID to a ControllerPublishVolume.
	PublishedNodes map[string]*controllerPublishRecord `json:"publishedNodes,omitempty"`
}

func (v *volumeRecord) kind() volumeKind {
	if v.Kind == "" {
		return kindDirectory
	}
	return v.Kind
}

// contentSource names what a volume was created from: exactly one field is
// set.
type contentSource struct {
	SnapshotID string `json:"snapshotID,omitempty"`
	VolumeID   string `json:"volumeID,omitempty"`
}

// snapshotRecord is one snapshot as the controller knows it.
type snapshotRecord struct {
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	SourceVolumeID string     `json:"sourceVolumeID"`
	Kind           volumeKind `json:"kind"`
	// SizeBytes is the source volume's capacity when the snapshot was
	// taken: the least a volume restored from it can hold.
	SizeBytes int64     `json:"sizeBytes"`
	CreatedAt time.Time `json:"createdAt"`
	// GroupSnapshotID is the group the snapshot is a member of, empty
	// for a snapshot of CreateSnapshot. A member is deleted with its
	// group only.
	GroupSnapshotID string `json:"groupSnapshotID,omitempty"`
}

// controllerPublishRecord is what a ControllerPublishVolume asked for; a
// repeated call must ask for the same to be idempotent.
type controllerPublishRecord struct {
	Readonly   bool   `json:"readonly"`
	AccessMode string `json:"accessMode"`
}

// stageRecord is what NodeStageVolume did; a repeated call must ask for the
// same to be idempotent.
type stageRecord struct {
	StagingPath string `json:"stagingPath"`
	// Device is the loop device of a block volume, from the publish
	// context.
	Device string `json:"device,omitempty"`
	// Block is true for access type block: nothing is mounted on the
	// staging path then.
	Block      bool     `json:"block,omitempty"`
	FsType     string   `json:"fsType,omitempty"`
	MountFlags []string `json:"mountFlags,omitempty"`
	AccessMode string   `json:"accessMode,omitempty"`
	Readonly   bool     `json:"readonly,omitempty"`
}

// sameRequest reports whether two stagings were asked for with the same
// capability and options; the staging path is compared by the caller.
func (r *stageRecord) sameRequest(o *stageRecord) bool {
	return r.Device == o.Device && r.Block == o.Block && r.FsType == o.FsType &&
		slices.Equal(r.MountFlags, o.MountFlags) && r.AccessMode == o.AccessMode && r.Readonly == o.Readonly
}

// publishRecord is what NodePublishVolume did at one target.
type publishRecord struct {
	Readonly   bool     `json:"readonly"`
	AccessMode string   `json:"accessMode"`
	Block      bool     `json:"block,omitempty"`
	MountFlags []string `json:"mountFlags,omitempty"`
	// CreatedTarget is set when NodePublishVolume created the target
	// path (directory or device file): the only case in which
	// NodeUnpublishVolume removes it.
	CreatedTarget bool `json:"createdTarget,omitempty"`
}

// same reports whether two publications were asked for alike.
func (p *publishRecord) same(o *publishRecord) bool {
	return p.Readonly == o.Readonly && p.AccessMode == o.AccessMode && p.Block == o.Block && slices.Equal(p.MountFlags, o.MountFlags)
}

func newState() *state {
	return &state{
		Volumes:        map[string]*volumeRecord{},
		Snapshots:      map[string]*snapshotRecord{},
		GroupSnapshots: map[string]*groupSnapshotRecord{},
		Staged:         map[string]*stageRecord{},
		Published:      map[string]map[string]*publishRecord{},
	}
}

// stateStore reads and writes a state file; writes are atomic so a crash
// leaves either the old or the new state, never a torn file.
type stateStore struct {
	path string
}

func (s *stateStore) load() (*state, error) {
	st := newState()
	raw, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	if err := json.Unmarshal(raw, st); err != nil {
		return nil, fmt.Errorf("parse state %s: %w", s.path, err)
	}
	// Maps that were empty when saved come back nil.
	if st.Volumes == nil {
		st.Volumes = map[string]*volumeRecord{}
	}
	if st.Snapshots == nil {
		st.Snapshots = map[string]*snapshotRecord{}
	}
	if st.GroupSnapshots == nil {
		st.GroupSnapshots = map[string]*groupSnapshotRecord{}
	}
	if st.Staged == nil {
		st.Staged = map[string]*stageRecord{}
	}
	if st.Published == nil {
		st.Published = map[string]map[string]*publishRecord{}
	}
	return st, nil
}

func (s *stateStore) save(st *state) error {
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	if err := writeFileAtomic(s.path, append(raw, '\n')); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

// writeFileAtomic replaces path with data via a synced temporary file in the
// same directory and a rename.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the rename durable; best effort
		d.Close()
	}
	return nil
}

// nodeRecord is what a node plugin publishes about itself in the shared
// backend, so the controller can tell a real node from a typo.
type nodeRecord struct {
	NodeID            string `json:"nodeID"`
	MaxVolumesPerNode int64  `json:"maxVolumesPerNode"`
	// Zone is the node's topology zone; empty if it has none.
	Zone string `json:"zone,omitempty"`
}

// segments is the topology NodeGetInfo reports for the node.
func (n nodeRecord) segments() map[string]string {
	seg := map[string]string{TopologyKeyNode: n.NodeID}
	if n.Zone != "" {
		seg[TopologyKeyZone] = n.Zone
	}
	return seg
}

func nodeRecordPath(root, nodeID string) string {
	return filepath.Join(root, "nodes", nodeID+".json")
}

// registerNode records a node plugin in the backend. The record outlives the
// process: a node whose plugin is down still exists.
func registerNode(root string, n nodeRecord) error {
	raw, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode node record: %w", err)
	}
	if err := writeFileAtomic(nodeRecordPath(root, n.NodeID), raw); err != nil {
		return fmt.Errorf("register node %s: %w", n.NodeID, err)
	}
	return nil
}

// lookupNode reads a node's record; ok is false if no plugin ever ran for it.
func lookupNode(root, nodeID string) (rec nodeRecord, ok bool, err error) {
	raw, err := os.ReadFile(nodeRecordPath(root, nodeID))
	if errors.Is(err, os.ErrNotExist) {
		return nodeRecord{}, false, nil
	}
	if err != nil {
		return nodeRecord{}, false, fmt.Errorf("read node record: %w", err)
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nodeRecord{}, false, fmt.Errorf("parse node record %s: %w", nodeID, err)
	}
	return rec, true, nil
}

// listNodes reads the records of every node that ever registered, in node
// ID order.
func listNodes(root string) ([]nodeRecord, error) {
	entries, err := os.ReadDir(filepath.Join(root, "nodes"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list node records: %w", err)
	}
	var nodes []nodeRecord
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue // temporary files of writeFileAtomic, strays
		}
		rec, ok, err := lookupNode(root, id)
		if err != nil {
			return nil, err
		}
		if ok {
			nodes = append(nodes, rec)
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].NodeID < nodes[j].NodeID })
	return nodes, nil
}

// volumeIDPrefix starts every volume ID this driver hands out.
const volumeIDPrefix = "vol-"

// snapshotIDPrefix starts every snapshot ID this driver hands out, so that
// a volume ID is never mistaken for a snapshot ID or the other way round.
const snapshotIDPrefix = "snap-"

// volumeIDFor derives the volume ID from the CreateVolume name, so that a
// retried CreateVolume finds the volume it made before, even if the state
// was lost in between.
func volumeIDFor(name string) string { return idFor(volumeIDPrefix, name) }

// snapshotIDFor does for CreateSnapshot what volumeIDFor does for
// CreateVolume.
func snapshotIDFor(name string) string { return idFor(snapshotIDPrefix, name) }

func idFor(prefix, name string) string {
	sum := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(sum[:])[:20]
}

// isIDWeMake reports whether s has the shape of idFor(prefix, ...).
func isIDWeMake(prefix, s string) bool {
	hexPart, ok := strings.CutPrefix(s, prefix)
	if !ok || len(hexPart) != 20 {
		return false
	}
	for _, c := range hexPart {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// maxIDLength is the CSI limit for identifiers the plugin hands out.
const maxIDLength = 128

// checkVolumeID accepts only IDs that are a single safe path element:
// lower-case letters, digits and dashes. IDs name files and directories
// below the root, so this is what keeps every call inside it.
func checkVolumeID(id string) error { return checkID("volume", id) }

// checkSnapshotID is checkVolumeID for snapshot IDs.
func checkSnapshotID(id string) error { return checkID("snapshot", id) }

func checkID(what, id string) error {
	if id == "" {
		return fmt.Errorf("%s id is empty", what)
	}
	if len(id) > maxIDLength {
		return fmt.Errorf("%s id is longer than %d bytes", what, maxIDLength)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("%s id %q may contain only a-z, 0-9 and '-'", what, id)
		}
	}
	return nil
}

// checkName refuses volume names that could be mistaken for a path.
func checkName(name string) error {
	if name == "" {
		return errors.New("name is empty")
	}
	if strings.ContainsAny(name, "/\x00") || strings.Contains(name, "..") {
		return fmt.Errorf("name %q must not contain '/', '..' or NUL", name)
	}
	return nil
}

// checkNodeID refuses node IDs that are not a single safe path element; a
// node ID names the node's record file in the backend.
func checkNodeID(id string) error {
	if id == "" {
		return errors.New("node id is empty")
	}
	if len(id) > maxIDLength {
		return fmt.Errorf("node id is longer than %d bytes", maxIDLength)
	}
	if id == "." || id == ".." || strings.ContainsAny(id, "/\x00") {
		return fmt.Errorf("node id %q must not contain '/' or NUL, nor be '.' or '..'", id)
	}
	return nil
}
