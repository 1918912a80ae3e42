package cluster

import (
	"fmt"
	"net/http"
	"sync/atomic"

	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/csisim/csisim/sim/csiclient"
)

// process is one run of a simulated component's process, from its start
// to its restart: the API clients and the CSI connection it was given end
// with it. A sync of the old run that is still at work when it ends — its
// CSI call held by the fault proxy — finishes in a process that is gone,
// as a goroutine of a killed container never does anything more: its
// writes are refused before they reach the API server, its further CSI
// calls are not sent, and the call it was in is cut off when the process
// ends (the proxies end its wait) and recorded as the proxy in front of a
// real sidecar records it: Canceled, "context canceled".
type process struct {
	name   string
	id     string // names this run to the fault proxies: name#N
	exited atomic.Bool
	conn   *csiclient.Conn // to the controller plugin, once dialled
}

// end marks the process exited.
func (p *process) end() { p.exited.Store(true) }

// RoundTrip-level refusal: what the exited process's clients get.
type exitedTransport struct {
	next http.RoundTripper
	p    *process
}

func (t exitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.p.exited.Load() {
		return nil, fmt.Errorf("%s has exited: %s %s not sent", t.p.name, req.Method, req.URL.Path)
	}
	return t.next.RoundTrip(req)
}

// restConfig is the API server's configuration for userAgent, its
// requests refused once p has exited.
func (cl *clients) restConfig(userAgent string, p *process) *rest.Config {
	cfg := cl.api.RESTConfig(userAgent)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return exitedTransport{next: rt, p: p} })
	return cfg
}

// clientOf returns a clientset of p's that names itself userAgent.
func (cl *clients) clientOf(userAgent string, p *process) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(cl.restConfig(userAgent, p))
}

// snapshotClientOf returns a clientset of the snapshot kinds of p's.
func (cl *clients) snapshotClientOf(userAgent string, p *process) snapclientset.Interface {
	return snapclientset.NewForConfigOrDie(cl.restConfig(userAgent, p))
}

// dialOf connects p to the controller plugin's endpoint as its actor, with
// a connection of its own that ends with it (csiclient.Process); dialling
// again returns it. driver is as dial's.
func (cl *clients) dialOf(endpoint, driver string, p *process) (*csiclient.Conn, error) {
	if p.conn != nil {
		return p.conn, nil
	}
	cl.processes++
	p.id = fmt.Sprintf("%s#%d", p.name, cl.processes)
	conn, err := csiclient.Dial(endpoint, p.name, cl.rec, csiclient.Virtual(), csiclient.Process(p.id, func() bool { return !p.exited.Load() }),
		csiclient.Driver(driver))
	if err != nil {
		return nil, err
	}
	cl.processConns = append(cl.processConns, conn)
	p.conn = conn
	return conn, nil
}
