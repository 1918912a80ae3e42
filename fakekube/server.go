// Package fakekube is an in-process Kubernetes API server for the objects of
// the volume lifecycle. It keeps the semantics controllers depend on —
// resourceVersion, optimistic concurrency, finalizers and deletionTimestamp,
// graceful pod deletion, status subresources, list and watch with selectors —
// and speaks the real REST protocol, so controllers use it through real
// client-go (in-process, without sockets) and people through kubectl (HTTP).
package fakekube

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/csisim/csisim/internal/apifault"
	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// scheme knows every type the server serves; it is built once and only read.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, snapshotv1.AddToScheme, groupsnapshotv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

var codecs = serializer.NewCodecFactory(scheme)

// Options configure a Server. The zero value is usable.
type Options struct {
	// Clock stamps creationTimestamp and deletionTimestamp; default: real time.
	Clock clock.PassiveClock
	// Seed makes UIDs and generated names reproducible.
	Seed uint64
	// HistoryLimit is how many changes are kept for watches that resume
	// from an older resourceVersion (older ones get 410 Gone). Default 10000.
	HistoryLimit int
	// EventTTL is how long an Event (core v1 or events.k8s.io) lives after
	// its last write, on Clock, as kube-apiserver's --event-ttl: then it is
	// deleted, as an etcd lease running out deletes it, with a DELETED
	// event for watchers and nothing for OnWrite. Default DefaultEventTTL
	// (1h); negative: Events never expire.
	EventTTL time.Duration
	// OnWrite, if set, is called for every accepted write, in
	// resourceVersion order, while the store is locked: it must not call
	// back into the server.
	OnWrite func(Write)
	// OnRefused, if set, is called for every write refused by
	// RefuseConflicting, with the error it was answered with, while the
	// store is locked: it must not call back into the server.
	OnRefused func(Write, error)
	// ContainerLogs, if set, is the kubelets' side of pods/log: what a
	// pod's container has printed. Unset: every container's log is empty.
	ContainerLogs ContainerLogs
	// NodeProxy, if set, is the kubelets' side of nodes/{name}/proxy:
	// what the node's kubelet serves at a path. Unset: no node answers.
	NodeProxy NodeProxy
	// Wait, if set, lets d pass for the request being served, on the
	// clock of whoever runs the clients: slow writes (SlowWrites) and a
	// client's wait before it retries a 429 (Throttle) take it. Unset:
	// they take no time.
	Wait func(d time.Duration)
	// Harness are the user agents of clients that observe the cluster
	// from outside it — a scenario's own client — which the request
	// faults (SetDown, SlowWrites, Throttle) leave alone.
	Harness []string
	// Refuse, if set, is a validating admission step of csisim's own,
	// after the default plugins', on every create and every update of an
	// object (not of its status): the fields it returns refuse the write
	// with 403 Forbidden, as an admission plugin refuses a request the
	// API accepts but the cluster will not carry out (PodSecurity,
	// ResourceQuota). old is nil on create. sim/cluster sets it to
	// unmodelled.CheckObject.
	Refuse RefuseFunc
	// DefaultTolerationSeconds is how long the DefaultTolerationSeconds
	// admission plugin lets a pod tolerate the not-ready and unreachable
	// taints (kube-apiserver --default-not-ready-toleration-seconds,
	// --default-unreachable-toleration-seconds); default 300.
	DefaultTolerationSeconds int64
}

// RefuseFunc judges an object being created (old nil) or updated: the
// fields it returns refuse the write (Options.Refuse).
type RefuseFunc func(gvk schema.GroupVersionKind, obj, old runtime.Object) field.ErrorList

// Server is one API server: a store and the REST protocol in front of it.
type Server struct {
	reg   *registry
	store *store
	clock clock.PassiveClock
	// containerLogs is Options.ContainerLogs (podlog.go).
	containerLogs ContainerLogs
	// nodeProxy is Options.NodeProxy (nodeproxy.go).
	nodeProxy NodeProxy
	// openAPI builds the OpenAPI documents on first use (openapi.go).
	openAPI func() (*openAPIServices, error)
	// faults, wait and harnessActors are the request faults and what
	// they need (outage.go).
	faults        apifault.State
	wait          func(time.Duration)
	harnessActors []string
}

// New returns a server with the namespaces a fresh cluster has.
func New(opts Options) *Server {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.HistoryLimit <= 0 {
		opts.HistoryLimit = 10000
	}
	if opts.EventTTL == 0 {
		opts.EventTTL = DefaultEventTTL
	}
	reg := newRegistry(defaultResources())
	s := &Server{reg: reg, clock: opts.Clock, store: newStore(reg, opts), containerLogs: opts.ContainerLogs, nodeProxy: opts.NodeProxy,
		wait: opts.Wait, harnessActors: opts.Harness,
		openAPI: sync.OnceValues(func() (*openAPIServices, error) { return newOpenAPIServices(reg) })}
	nsRes := reg.byGVR[coreV1.WithResource("namespaces")]
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := s.store.create(context.Background(), "kube-apiserver", "kube-apiserver", nsRes, "", ns); err != nil {
			panic(err) // cannot happen on an empty store
		}
	}
	pcRes := reg.byGVR[schedulingV1.WithResource("priorityclasses")]
	for _, pc := range systemPriorityClasses() {
		if _, err := s.store.create(context.Background(), "kube-apiserver", "kube-apiserver", pcRes, "", pc); err != nil {
			panic(err) // cannot happen on an empty store
		}
	}
	return s
}

// ResourceVersion is the resourceVersion of the last write: it changes
// with every write to any object, so it tells whether anything changed.
func (s *Server) ResourceVersion() string { return s.store.currentRV() }

// RESTConfig returns a client configuration that reaches this server
// in-process, without a socket. userAgent names the client in the timeline.
func (s *Server) RESTConfig(userAgent string) *rest.Config {
	return &rest.Config{
		Host:      "http://fakekube.invalid",
		UserAgent: userAgent,
		Transport: &inProcessTransport{handler: s, server: s, actor: actorOf(userAgent)},
		QPS:       -1, // no client-side throttling: the server is in-process
		Timeout:   0,
	}
}

// Serve answers HTTP requests on l until l is closed.
func (s *Server) Serve(l net.Listener) error {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(l)
}
