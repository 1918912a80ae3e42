package hostpath

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// stateFileName is the file in the state directory that holds a process's
// state.
const stateFileName = "state.json"

// state is everything one plugin process remembers across restarts. A
// controller fills Volumes, a node fills Staged and Published; a process in
// ModeAll fills all three.
type state struct {
	// Volumes maps volume ID to what CreateVolume made.
	Volumes map[string]*volumeRecord `json:"volumes,omitempty"`
	// Staged maps volume ID to where NodeStageVolume mounted it.
	Staged map[string]*stageRecord `json:"staged,omitempty"`
	// Published maps volume ID and target path to a NodePublishVolume mount.
	Published map[string]map[string]*publishRecord `json:"published,omitempty"`
}

// volumeRecord is one created volume as the controller knows it.
type volumeRecord struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	CapacityBytes int64  `json:"capacityBytes"`
	// PublishedNodes maps node ID to a ControllerPublishVolume.
	PublishedNodes map[string]*controllerPublishRecord `json:"publishedNodes,omitempty"`
}

// controllerPublishRecord is what a ControllerPublishVolume asked for; a
// repeated call must ask for the same to be idempotent.
type controllerPublishRecord struct {
	Readonly   bool   `json:"readonly"`
	AccessMode string `json:"accessMode"`
}

type stageRecord struct {
	StagingPath string `json:"stagingPath"`
}

type publishRecord struct {
	Readonly   bool   `json:"readonly"`
	AccessMode string `json:"accessMode"`
}

func newState() *state {
	return &state{
		Volumes:   map[string]*volumeRecord{},
		Staged:    map[string]*stageRecord{},
		Published: map[string]map[string]*publishRecord{},
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

// volumeIDPrefix starts every ID this driver hands out.
const volumeIDPrefix = "vol-"

// volumeIDFor derives the volume ID from the CreateVolume name, so that a
// retried CreateVolume finds the volume it made before, even if the state
// was lost in between.
func volumeIDFor(name string) string {
	sum := sha256.Sum256([]byte(name))
	return volumeIDPrefix + hex.EncodeToString(sum[:])[:20]
}

// maxIDLength is the CSI limit for identifiers the plugin hands out.
const maxIDLength = 128

// checkVolumeID accepts only IDs that are a single safe path element:
// lower-case letters, digits and dashes.
func checkVolumeID(id string) error {
	if id == "" {
		return errors.New("volume id is empty")
	}
	if len(id) > maxIDLength {
		return fmt.Errorf("volume id is longer than %d bytes", maxIDLength)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("volume id %q may contain only a-z, 0-9 and '-'", id)
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
