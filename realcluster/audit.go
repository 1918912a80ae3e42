package realcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/fault"
)

// Who made an API write. The real kube-apiserver calls no hook on a write,
// and what a watch delivers does not say who wrote: managedFields names
// only the first word of the writer's user agent (every controller of
// kube-controller-manager is "kube-controller-manager"), and a delete, a
// binding or the removal of a finalizer changes no managedFields entry at
// all. Its audit log does say, for every request: the user (each
// controller of the controller manager has its own service account), the
// user agent, the verb and the subresource. So the API server sends its
// audit events for the writes the timeline shows to a webhook in this
// process (auditSink), in blocking mode, and each watch event is matched to
// the write that caused it by resourceVersion (auditIndex).

// auditPolicy logs, at RequestResponse level so that the stored object
// and its resourceVersion come along, the writes to the kinds the timeline
// watches, and nothing else; the sink never sees a Lease.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
  - level: RequestResponse
    verbs: [create, update, patch, delete, deletecollection]
    resources:
      - group: ""
        resources: [pods, pods/status, pods/binding, persistentvolumeclaims, persistentvolumeclaims/status,
          persistentvolumes, persistentvolumes/status, nodes, nodes/status, events]
      - group: storage.k8s.io
        resources: [volumeattachments, volumeattachments/status, csinodes, storageclasses, csidrivers]
      - group: events.k8s.io
        resources: [events]
  - level: None
`

// auditEvent is the part of an audit.k8s.io/v1 Event the sink reads.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	ResponseObject json.RawMessage `json:"responseObject"`
}

// storedObject is the part of a response object the index needs.
type storedObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name                       string   `json:"name"`
		Namespace                  string   `json:"namespace"`
		ResourceVersion            string   `json:"resourceVersion"`
		DeletionTimestamp          *string  `json:"deletionTimestamp"`
		DeletionGracePeriodSeconds *int64   `json:"deletionGracePeriodSeconds"`
		Finalizers                 []string `json:"finalizers"`
	} `json:"metadata"`
}

// auditRecord is one successful write.
type auditRecord struct {
	resource, namespace, name string
	// rv is the resourceVersion the write left the object at; empty when
	// the response was a Status (a binding, some deletes).
	rv          string
	verb        string // the audit verb: create, update, patch, delete, deletecollection
	subresource string
	actor       string
	// removes says the write left the object with a deletionTimestamp, no
	// finalizers and no grace period: the object is gone after it.
	removes bool
	arrived time.Time
	used    bool
}

// recordFromEvent turns an audit event into a record; ok is false for
// events that are not a finished, successful write.
func recordFromEvent(ev auditEvent, now time.Time) (auditRecord, bool) {
	if ev.Stage != "ResponseComplete" || ev.ObjectRef == nil || ev.ResponseStatus == nil ||
		ev.ResponseStatus.Code < 200 || ev.ResponseStatus.Code > 299 {
		return auditRecord{}, false
	}
	switch ev.Verb {
	case "create", "update", "patch", "delete":
	case "deletecollection":
		// One request, many DELETED events (the namespace controller
		// empties a namespace so): a record for the collection, which
		// each of them matches.
		return auditRecord{resource: ev.ObjectRef.Resource, namespace: ev.ObjectRef.Namespace,
			verb: ev.Verb, actor: actorName(ev.User.Username, ev.UserAgent), arrived: now}, true
	default:
		return auditRecord{}, false
	}
	r := auditRecord{resource: ev.ObjectRef.Resource, namespace: ev.ObjectRef.Namespace, name: ev.ObjectRef.Name,
		verb: ev.Verb, subresource: ev.ObjectRef.Subresource, actor: actorName(ev.User.Username, ev.UserAgent), arrived: now}
	var obj storedObject
	if len(ev.ResponseObject) > 0 && json.Unmarshal(ev.ResponseObject, &obj) == nil && obj.Kind != "Status" {
		m := obj.Metadata
		// A create with generateName has no name until it is stored.
		if m.Name != "" {
			r.name, r.namespace = m.Name, m.Namespace
		}
		r.rv = m.ResourceVersion
		r.removes = m.DeletionTimestamp != nil && len(m.Finalizers) == 0 &&
			(m.DeletionGracePeriodSeconds == nil || *m.DeletionGracePeriodSeconds == 0)
	}
	return r, r.name != ""
}

// actorName names the writer the way the simulator's timeline names its
// components: the controller manager's controllers by their service
// account ("persistent-volume-binder", "attachdetach-controller"), the
// scheduler as kube-scheduler, anything that writes as an ordinary user
// (the sidecars, the simulated kubelets, the scenario) by the first word
// of its user agent ("csi-provisioner", "kubelet:node-1", "scenario").
func actorName(username, userAgent string) string {
	switch {
	case strings.HasPrefix(username, "system:serviceaccount:kube-system:"):
		return strings.TrimPrefix(username, "system:serviceaccount:kube-system:")
	case username == "system:kube-scheduler", username == "system:kube-controller-manager":
		return strings.TrimPrefix(username, "system:")
	case username == "system:apiserver":
		return "kube-apiserver"
	case strings.HasPrefix(username, "system:node:"):
		// A real kubelet, by its node credentials; the simulator names
		// its kubelets the same way.
		return "kubelet:" + strings.TrimPrefix(username, "system:node:")
	}
	if name := fakekube.AppendedName(userAgent); isKubelet(name) {
		// A simulated kubelet, by the name its user agent appends.
		return name
	}
	if ua := managerOf(userAgent); ua != "" {
		return ua
	}
	return username
}

// isKubelet says whether name is a kubelet's (fault.KubeletComponent).
func isKubelet(name string) bool {
	_, ok := fault.KubeletNode(name)
	return ok
}

// managerOf is the field manager the API server derives from a user agent:
// its first word, up to the first slash.
func managerOf(userAgent string) string {
	name, _, _ := strings.Cut(userAgent, "/")
	return strings.TrimSpace(name)
}

// auditIndex holds the writes the sink has received, by object, until a
// watch event claims them.
type auditIndex struct {
	mu      sync.Mutex
	records map[string][]*auditRecord // by objectKey
	changed chan struct{}             // closed and replaced on every add
}

func newAuditIndex() *auditIndex {
	return &auditIndex{records: map[string][]*auditRecord{}, changed: make(chan struct{})}
}

func objectKey(resource, namespace, name string) string {
	return resource + "/" + namespace + "/" + name
}

// recordsKept bounds how long a record nobody claimed is kept (a write
// whose watch event the timeline skips, such as a heartbeat).
const recordsKept = 2 * time.Minute

func (x *auditIndex) add(r auditRecord) {
	x.mu.Lock()
	defer x.mu.Unlock()
	key := objectKey(r.resource, r.namespace, r.name)
	kept := x.records[key][:0]
	for _, old := range x.records[key] {
		if !old.used && r.arrived.Sub(old.arrived) < recordsKept {
			kept = append(kept, old)
		}
	}
	x.records[key] = append(kept, &r)
	close(x.changed)
	x.changed = make(chan struct{})
}

// match finds, and claims, the write that caused a watch event, or
// returns nil and a channel that is closed when another write arrives.
func (x *auditIndex) match(o *observed) (*auditRecord, <-chan struct{}) {
	x.mu.Lock()
	defer x.mu.Unlock()
	recs := x.records[objectKey(o.resource, o.namespace, o.name)]
	claim := func(r *auditRecord) *auditRecord {
		r.used = true
		return r
	}
	// The write whose response carries the object's new resourceVersion.
	for _, r := range recs {
		if !r.used && r.rv != "" && r.rv == o.rv {
			return claim(r), nil
		}
	}
	// Writes that answer with a Status, newest first: a binding sets a
	// pod's node; a delete, or the write that removed the last finalizer,
	// ends in a DELETED event.
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		switch {
		case r.used:
		case o.typ == observedUpdated && r.subresource == "binding" && o.bound:
			return claim(r), nil
		case o.typ == observedDeleted && (r.verb == "delete" || r.removes):
			return claim(r), nil
		}
	}
	// A deletecollection of the object's kind in its namespace: not
	// claimed, as it deletes the others too.
	if o.typ == observedDeleted {
		for _, r := range x.records[objectKey(o.resource, o.namespace, "")] {
			if r.verb == "deletecollection" {
				return r, nil
			}
		}
	}
	// One request may store an object twice: deleting a pod without a
	// grace period first stores it with deletionGracePeriodSeconds 0, then
	// removes it, and its audit event carries only the last state. A
	// record of a later state of the object (a higher resourceVersion, or
	// an unclaimed delete) says that no record of this one is coming; the
	// intermediate state is attributed to that write, which the later
	// event still claims.
	for _, r := range recs {
		if r.used {
			continue
		}
		if n, err := strconv.ParseUint(r.rv, 10, 64); err == nil && o.order > 0 && n > o.order || r.rv == "" && r.verb == "delete" {
			return r, nil
		}
	}
	return nil, x.changed
}

// wait waits until the write that caused o has arrived, or until deadline.
func (x *auditIndex) wait(ctx context.Context, o *observed, deadline time.Time) *auditRecord {
	for {
		r, changed := x.match(o)
		if r != nil {
			return r
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-changed:
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		t.Stop()
	}
}

// auditSink receives the API server's audit events over HTTP on loopback.
type auditSink struct {
	index  *auditIndex
	srv    *http.Server
	url    string
	served chan error
}

func startAuditSink(index *auditIndex) (*auditSink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("audit sink: %w", err)
	}
	s := &auditSink{index: index, url: "http://" + l.Addr().String() + "/audit", served: make(chan error, 1)}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	go func() { s.served <- s.srv.Serve(l) }()
	return s, nil
}

func (s *auditSink) serveHTTP(w http.ResponseWriter, r *http.Request) {
	var list struct {
		Items []auditEvent `json:"items"`
	}
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &list)
	}
	if err != nil {
		// The API server retries a failed delivery, holding up the
		// request in blocking mode; a batch we cannot read will not
		// read better the second time.
		w.WriteHeader(http.StatusOK)
		return
	}
	now := time.Now()
	for _, ev := range list.Items {
		if rec, ok := recordFromEvent(ev, now); ok {
			s.index.add(rec)
		}
	}
	w.WriteHeader(http.StatusOK)
}

// apiserverArgs writes the audit policy and the webhook's kubeconfig into
// dir and returns the kube-apiserver flags that use them.
func (s *auditSink) apiserverArgs(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit sink: %w", err)
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, fmt.Errorf("audit sink: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sink"] = &clientcmdapi.Cluster{Server: s.url}
	cfg.AuthInfos["sink"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["sink"] = &clientcmdapi.Context{Cluster: "sink", AuthInfo: "sink"}
	cfg.CurrentContext = "sink"
	kubeconfig := filepath.Join(dir, "audit-webhook.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		return nil, fmt.Errorf("audit sink: %w", err)
	}
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-webhook-config-file=" + kubeconfig,
		// Blocking: each event is delivered before the request returns,
		// so it is there by the time the watch event is.
		"--audit-webhook-mode=blocking",
		// A failed delivery holds up the request while it is retried;
		// the default first backoff is 10 s.
		"--audit-webhook-initial-backoff=100ms",
	}, nil
}

// close stops serving.
func (s *auditSink) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("audit sink: %w", err)
	}
	return nil
}
