package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// The JSON Lines format: one JSON object per line, first the entries in
// timeline order, then the invariant violations. The schema is in
// trace/README.md; the types below are it, field for field. Wall-clock
// durations are left out, so that two runs with the same seed and
// scenario write the same bytes.

// jsonLine is one line: an entry, or (Kind "INVARIANT") a violation.
type jsonLine struct {
	Seq       int            `json:"seq,omitempty"`
	At        int64          `json:"at"`     // virtual time since the run started, in nanoseconds
	AtText    string         `json:"atText"` // the same as the text timeline prints it: "+1.234s"
	Kind      Kind           `json:"kind"`
	Actor     string         `json:"actor,omitempty"`
	Verb      string         `json:"verb,omitempty"`
	Object    string         `json:"object,omitempty"`
	Detail    string         `json:"detail,omitempty"`
	Err       string         `json:"err,omitempty"`
	Driver    string         `json:"driver,omitempty"`
	CSI       *jsonCSICall   `json:"csi,omitempty"`
	Write     *jsonAPIWrite  `json:"write,omitempty"`
	Data      *jsonDataCheck `json:"data,omitempty"`
	Violation *jsonViolation `json:"violation,omitempty"`
}

type jsonCSICall struct {
	Node          string   `json:"node,omitempty"`
	NodeID        string   `json:"nodeID,omitempty"`
	Volume        string   `json:"volume,omitempty"`
	Name          string   `json:"name,omitempty"`
	Snapshot      string   `json:"snapshot,omitempty"`
	StagingPath   string   `json:"stagingPath,omitempty"`
	TargetPath    string   `json:"targetPath,omitempty"`
	AccessMode    string   `json:"accessMode,omitempty"`
	Block         bool     `json:"block,omitempty"`
	ReadOnly      bool     `json:"readOnly,omitempty"`
	Ephemeral     bool     `json:"ephemeral,omitempty"`
	MountFlags    []string `json:"mountFlags,omitempty"`
	Code          string   `json:"code"` // the gRPC status code's name: "OK", "NotFound"
	Capabilities  []string `json:"capabilities,omitempty"`
	StartedAfter  int      `json:"startedAfter"`
	StartedAt     int64    `json:"startedAt"` // virtual time the call was sent, in nanoseconds
	StartedAtText string   `json:"startedAtText"`
}

type jsonAPIWrite struct {
	Verb        string `json:"verb"`
	Subresource string `json:"subresource,omitempty"`
	Kind        string `json:"kind"`
	APIVersion  string `json:"apiVersion,omitempty"` // the object's group/version, "" if it has none
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name"`
	Removed     bool   `json:"removed,omitempty"`
	// Object is the object as stored after the write, with apiVersion
	// and kind set, as the API server would serve it.
	Object json.RawMessage `json:"object,omitempty"`
}

type jsonDataCheck struct {
	PodUID    string   `json:"podUID"`
	Namespace string   `json:"namespace"`
	Pod       string   `json:"pod"`
	Claim     string   `json:"claim,omitempty"`
	Volume    string   `json:"volume,omitempty"`
	Skipped   string   `json:"skipped,omitempty"`
	Wrote     bool     `json:"wrote,omitempty"`
	Found     []string `json:"found,omitempty"`
	Corrupt   []string `json:"corrupt,omitempty"`
	Copied    []string `json:"copied,omitempty"`
	Err       string   `json:"err,omitempty"`
}

type jsonViolation struct {
	Invariant string `json:"invariant"`
	Message   string `json:"message"`
	Entries   []int  `json:"entries,omitempty"`
	// KnownUpstream: a known Kubernetes bug caused it (no failure).
	KnownUpstream string `json:"knownUpstream,omitempty"`
}

// objectScheme knows every type csisim's API server serves, to give a
// written object its apiVersion and kind and to decode it back. It is
// built once and only read.
var objectScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, snapshotv1.AddToScheme, groupsnapshotv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

var objectDecoder = serializer.NewCodecFactory(objectScheme).UniversalDeserializer()

// WriteJSON writes tl as JSON Lines: one line per entry, then one per
// violation.
func WriteJSON(w io.Writer, tl Timeline) error {
	bw := bufio.NewWriter(w)
	for _, e := range tl.Entries {
		line, err := tl.entryJSON(e)
		if err != nil {
			return err
		}
		bw.Write(line)
		bw.WriteByte('\n')
	}
	for _, v := range tl.Violations {
		line, err := tl.violationJSON(v)
		if err != nil {
			return err
		}
		bw.Write(line)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the JSON timeline: %w", err)
	}
	return nil
}

// entryJSON is one entry as its JSON line, without the newline.
func (tl Timeline) entryJSON(e Entry) ([]byte, error) {
	l := jsonLine{Seq: e.Seq, At: int64(e.At), AtText: formatOffset(e.At), Kind: e.Kind, Actor: e.Actor, Verb: e.Verb,
		Object: e.Object, Detail: e.Detail, Err: e.Err, Driver: e.Driver}
	if c := e.Call; c != nil {
		l.CSI = &jsonCSICall{Node: c.Node, NodeID: c.NodeID, Volume: c.Volume, Name: c.Name, Snapshot: c.Snapshot, StagingPath: c.StagingPath,
			TargetPath: c.TargetPath, AccessMode: c.AccessMode, Block: c.Block, ReadOnly: c.ReadOnly, Ephemeral: c.Ephemeral,
			MountFlags: c.MountFlags, Code: c.Code.String(), Capabilities: c.Capabilities, StartedAfter: c.StartedAfter, StartedAt: int64(c.Started),
			StartedAtText: formatOffset(c.Started)}
	}
	if wr := e.Write; wr != nil {
		l.Write = &jsonAPIWrite{Verb: wr.Verb, Subresource: wr.Subresource, Kind: wr.Kind, Namespace: wr.Namespace,
			Name: wr.Name, Removed: wr.Removed}
		if wr.Object != nil {
			raw, gv, err := encodeObject(wr.Object, wr.Kind)
			if err != nil {
				return nil, fmt.Errorf("entry #%d: %w", e.Seq, err)
			}
			l.Write.Object, l.Write.APIVersion = raw, gv
		}
	}
	if d := e.Check; d != nil {
		l.Data = &jsonDataCheck{PodUID: d.PodUID, Namespace: d.Namespace, Pod: d.Pod, Claim: d.Claim, Volume: d.Volume,
			Skipped: d.Skipped, Wrote: d.Wrote, Found: d.Found, Corrupt: d.Corrupt, Copied: d.Copied, Err: d.Err}
	}
	out, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("entry #%d as JSON: %w", e.Seq, err)
	}
	return tl.scrubJSON(out), nil
}

// scrubJSON is a JSON line with the run's directory written as RootWord.
// The directory's name (/tmp/csisim-run-123) has nothing JSON escapes.
func (tl Timeline) scrubJSON(line []byte) []byte {
	if tl.Root == "" {
		return line
	}
	return bytes.ReplaceAll(line, []byte(tl.Root), []byte(RootWord))
}

// violationJSON is one violation of tl as its JSON line, without the
// newline; its time is that of the last entry it names.
func (tl Timeline) violationJSON(v Violation) ([]byte, error) {
	at := tl.violationAt(v).At
	out, err := json.Marshal(jsonLine{At: int64(at), AtText: formatOffset(at), Kind: ViolationKind,
		Violation: &jsonViolation{Invariant: v.Invariant, Message: v.Message, Entries: v.Entries, KnownUpstream: v.KnownUpstream}})
	if err != nil {
		return nil, fmt.Errorf("violation of %s as JSON: %w", v.Invariant, err)
	}
	return tl.scrubJSON(out), nil
}

// encodeObject is obj as JSON with its apiVersion and kind set, and its
// group/version. obj itself is not changed: others read it. Its
// managedFields are left out, as kubectl get -o yaml leaves them out
// unless asked (--show-managed-fields, false by default since v1.21): they
// are the API server's bookkeeping of who wrote which field, not the
// object's story, and would make every line several times longer; csisim
// diff compares their managers.
func encodeObject(obj runtime.Object, kind string) (json.RawMessage, string, error) {
	gvks, _, err := objectScheme.ObjectKinds(obj)
	if err != nil {
		return nil, "", fmt.Errorf("the %s written: %w", kind, err)
	}
	gvk := gvks[0]
	for _, k := range gvks {
		if k.Kind == kind {
			gvk = k
			break
		}
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, "", fmt.Errorf("the %s written as JSON: %w", kind, err)
	}
	return raw, gvk.GroupVersion().String(), nil
}

// ReadJSON reads a timeline WriteJSON wrote. The objects of API writes come
// back typed (*corev1.PersistentVolumeClaim, *snapshotv1.VolumeSnapshot,
// ...) with their apiVersion and kind set. What the format leaves out
// stays zero: entries' wall-clock durations, and the timeline's Root (its
// paths keep RootWord).
func ReadJSON(r io.Reader) (*Timeline, error) {
	tl := &Timeline{}
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if perr := tl.addJSONLine(line); perr != nil {
				return nil, fmt.Errorf("JSON timeline, line %d: %w", n, perr)
			}
		}
		if errors.Is(err, io.EOF) {
			return tl, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the JSON timeline: %w", err)
		}
	}
}

func (tl *Timeline) addJSONLine(line []byte) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var l jsonLine
	if err := dec.Decode(&l); err != nil {
		return err
	}
	if l.Kind == ViolationKind {
		if l.Violation == nil {
			return fmt.Errorf("an %s line without its violation", ViolationKind)
		}
		tl.Violations = append(tl.Violations, Violation{Invariant: l.Violation.Invariant, Message: l.Violation.Message,
			Entries: l.Violation.Entries, KnownUpstream: l.Violation.KnownUpstream})
		return nil
	}
	e := Entry{Seq: l.Seq, At: time.Duration(l.At), Kind: l.Kind, Actor: l.Actor, Verb: l.Verb, Object: l.Object,
		Detail: l.Detail, Err: l.Err, Driver: l.Driver}
	if c := l.CSI; c != nil {
		code, err := parseCode(c.Code)
		if err != nil {
			return err
		}
		e.Call = &CSICall{Node: c.Node, NodeID: c.NodeID, Volume: c.Volume, Name: c.Name, Snapshot: c.Snapshot, StagingPath: c.StagingPath,
			TargetPath: c.TargetPath, AccessMode: c.AccessMode, Block: c.Block, ReadOnly: c.ReadOnly, Ephemeral: c.Ephemeral,
			MountFlags: c.MountFlags, Code: code, Capabilities: c.Capabilities, StartedAfter: c.StartedAfter, Started: time.Duration(c.StartedAt)}
	}
	if wr := l.Write; wr != nil {
		e.Write = &APIWrite{Verb: wr.Verb, Subresource: wr.Subresource, Kind: wr.Kind, Namespace: wr.Namespace,
			Name: wr.Name, Removed: wr.Removed}
		if len(wr.Object) > 0 {
			obj, err := decodeObject(wr.Object, wr.APIVersion, wr.Kind)
			if err != nil {
				return fmt.Errorf("entry #%d: %w", l.Seq, err)
			}
			e.Write.Object = obj
		}
	}
	if d := l.Data; d != nil {
		e.Check = &DataCheck{PodUID: d.PodUID, Namespace: d.Namespace, Pod: d.Pod, Claim: d.Claim, Volume: d.Volume,
			Skipped: d.Skipped, Wrote: d.Wrote, Found: d.Found, Corrupt: d.Corrupt, Copied: d.Copied, Err: d.Err}
	}
	tl.Entries = append(tl.Entries, e)
	return nil
}

// decodeObject is the typed object of a write's JSON, which must be of the
// write's apiVersion and kind.
func decodeObject(raw json.RawMessage, apiVersion, kind string) (runtime.Object, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("the object's apiVersion %q: %w", apiVersion, err)
	}
	want := gv.WithKind(kind)
	obj, got, err := objectDecoder.Decode(raw, &want, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding the %s: %w", kind, err)
	}
	if *got != want {
		return nil, fmt.Errorf("the object is a %s, the write says %s", got, want)
	}
	return obj, nil
}

// parseCode is the gRPC code of its name (codes.Code's String).
func parseCode(name string) (codes.Code, error) {
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if c.String() == name {
			return c, nil
		}
	}
	if n, ok := strings.CutPrefix(name, "Code("); ok {
		var c uint32
		if _, err := fmt.Sscanf(n, "%d)", &c); err == nil {
			return codes.Code(c), nil
		}
	}
	return 0, fmt.Errorf("unknown gRPC code %q", name)
}
