// Package apiproxy is a reverse proxy that stands between a real control
// plane's components and kube-apiserver, so that the API server faults a
// scenario names — the server stopped, slow writes, 429 throttling — can
// be injected on the real control plane as fakekube injects them in the
// simulator. A harness that observes the cluster talks to kube-apiserver
// past the proxy, and is never disturbed.
//
// The proxy terminates TLS with the API server's serving certificate and
// re-originates each request to kube-apiserver, so it sees each request
// and can answer it itself:
//
//   - a client with a certificate (verified against the cluster CA) is
//     passed on by request-header authentication, as an authenticating
//     proxy or kube-aggregator does: the proxy presents the front-proxy
//     client certificate and names the user, groups and credential ID in
//     X-Remote-* headers, which kube-apiserver trusts from that
//     certificate only. The API server authorizes, audits and names the
//     writer (managedFields, from the User-Agent, which passes unchanged)
//     as it would for the client itself;
//   - a client with a bearer token (kube-controller-manager's controllers)
//     is passed on with its token and no certificate: kube-apiserver
//     authenticates the token itself;
//   - responses stream: a watch's events and an upgraded connection (exec,
//     attach, port-forward) reach the client as they come.
//
// SetDown stops the proxy as a stopped kube-apiserver is: its port refuses
// connections and every open connection, watches included, is closed; when
// it starts again, a watch from before is answered as a restarted
// kube-apiserver's watch cache answers it, 410 Gone, so the reflectors list
// again.
package apiproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// Config describes a proxy to start.
type Config struct {
	// Listen is the address to listen on; default 127.0.0.1:0 (URL says
	// which port it got).
	Listen string
	// Backend is kube-apiserver's URL, https://host:port.
	Backend string
	// Serving is the certificate the proxy serves with; the clients must
	// trust it for the proxy's address (the API server's own serving
	// certificate does for 127.0.0.1).
	Serving tls.Certificate
	// ClientCAs verify the clients' certificates (kube-apiserver's
	// --client-ca-file).
	ClientCAs *x509.CertPool
	// BackendCAs verify kube-apiserver's serving certificate.
	BackendCAs *x509.CertPool
	// FrontProxy is the client certificate the proxy presents to
	// kube-apiserver for a client it has authenticated by certificate:
	// signed by --requestheader-client-ca-file, its CN one of
	// --requestheader-allowed-names.
	FrontProxy tls.Certificate
	// Component names the component a request comes from, for the faults
	// that strike one component; default FirstWord.
	Component func(Client) string
	// Log receives the proxy's errors (a backend that cannot be reached);
	// default: discarded.
	Log io.Writer
	// ResourceVersion returns the cluster's current resourceVersion. The
	// proxy asks it as it comes back from SetDown(true): a restarted
	// kube-apiserver's watch cache begins there. Without it, watches
	// resume after an outage as after a network partition.
	ResourceVersion func(context.Context) (uint64, error)
}

// Proxy is a running reverse proxy.
type Proxy struct {
	cfg    Config
	addr   string // host:port it listens on, kept while down
	server *http.Server
	tls    *tls.Config
	info   *request.RequestInfoFactory
	// byCert passes on a request of a client with a certificate, byToken
	// any other.
	byCert, byToken *httputil.ReverseProxy
	transports      []*http.Transport

	faults faults

	mu       sync.Mutex // guards listener and conns
	listener net.Listener
	conns    map[net.Conn]struct{}
	closed   bool
	served   sync.WaitGroup
}

// Start listens and serves until Close.
func Start(cfg Config) (*Proxy, error) {
	backend, err := url.Parse(cfg.Backend)
	if err != nil || backend.Scheme != "https" || backend.Host == "" {
		return nil, fmt.Errorf("apiproxy: backend %q is not an https URL", cfg.Backend)
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Component == nil {
		cfg.Component = FirstWord
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	p := &Proxy{
		cfg: cfg,
		tls: &tls.Config{
			Certificates: []tls.Certificate{cfg.Serving},
			ClientCAs:    cfg.ClientCAs,
			ClientAuth:   tls.VerifyClientCertIfGiven,
			NextProtos:   []string{"h2", "http/1.1"},
			MinVersion:   tls.VersionTLS12,
		},
		info:  &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")},
		conns: map[net.Conn]struct{}{},
	}
	p.byCert = p.reverseProxy(backend, &cfg.FrontProxy)
	p.byToken = p.reverseProxy(backend, nil)
	p.server = &http.Server{Handler: p, ErrorLog: log.New(cfg.Log, "apiproxy: ", 0), ReadHeaderTimeout: time.Minute}
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("apiproxy: %w", err)
	}
	p.addr = l.Addr().String()
	p.serve(l)
	return p, nil
}

// URL is where the clients reach the proxy, https://host:port.
func (p *Proxy) URL() string { return "https://" + p.addr }

// reverseProxy passes requests on to backend, presenting cert if it is
// set; each response is flushed as it comes, for watches.
func (p *Proxy) reverseProxy(backend *url.URL, cert *tls.Certificate) *httputil.ReverseProxy {
	tlsConfig := &tls.Config{RootCAs: p.cfg.BackendCAs, MinVersion: tls.VersionTLS12}
	if cert != nil {
		tlsConfig.Certificates = []tls.Certificate{*cert}
	}
	// HTTP/2 multiplexes the components' many watches over a few
	// connections, as client-go does; an upgrade (exec, attach,
	// port-forward) needs HTTP/1.1.
	h2 := &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 32}
	h1Config := tlsConfig.Clone()
	h1Config.NextProtos = []string{"http/1.1"}
	h1 := &http.Transport{TLSClientConfig: h1Config}
	p.transports = append(p.transports, h2, h1)
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(backend)
			setIdentity(pr.Out.Header, clientOf(pr.In))
		},
		Transport:     upgradeAware{h2: h2, h1: h1},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() == nil {
				fmt.Fprintf(p.cfg.Log, "apiproxy: %s %s: %v\n", r.Method, r.URL.Path, err)
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
}

// upgradeAware sends an upgrade over HTTP/1.1, anything else over
// HTTP/2.
type upgradeAware struct{ h2, h1 http.RoundTripper }

func (t upgradeAware) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Upgrade") != "" {
		return t.h1.RoundTrip(r)
	}
	return t.h2.RoundTrip(r)
}

// ServeHTTP answers a request as the faults in force say, or passes it on.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.Down() {
		// A request on a connection accepted just before SetDown: it
		// ends as the connection does.
		panic(http.ErrAbortHandler)
	}
	client := clientOf(r)
	if !p.isEvent(r) {
		component := p.cfg.Component(client)
		if p.throttled(w, component) {
			return
		}
		if !wait(r, p.writeLatency(r, component)) {
			return
		}
	}
	if p.expiredWatch(w, r) {
		return
	}
	if client.cert != nil {
		p.byCert.ServeHTTP(w, r)
		return
	}
	p.byToken.ServeHTTP(w, r)
}

// isEvent says whether r is a request for Events (core or events.k8s.io).
func (p *Proxy) isEvent(r *http.Request) bool {
	info, err := p.info.NewRequestInfo(r)
	return err == nil && info.IsResourceRequest && info.Resource == "events"
}

// Down reports whether the proxy is stopped (SetDown).
func (p *Proxy) Down() bool {
	return p.faults.Down()
}

// SetDown stops (true) or starts (false) the proxy as kube-apiserver's
// process would be: while it is down, nothing listens on its port, so a
// client's connection is refused (ECONNREFUSED), and every connection
// open when it stopped is closed — a watch ends as its stream breaks, with
// no ERROR event. When it starts again it listens on the same address.
func (p *Proxy) SetDown(down bool) error {
	was := p.faults.SetDown(down)
	switch {
	case down && !was:
		p.mu.Lock()
		err := p.listener.Close()
		p.mu.Unlock()
		p.closeConns()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
		return err
	case !down && was:
		err := p.restartWatchCache()
		return errors.Join(err, p.listenAgain())
	}
	return nil
}

// listenAgain listens on the proxy's address again. The port was free
// while the proxy was down; in that while another socket may have taken
// it (an outgoing connection is given a port of the same range), so it
// tries for a few seconds.
func (p *Proxy) listenAgain() error {
	var err error
	for range 50 {
		var l net.Listener
		if l, err = net.Listen("tcp", p.addr); err == nil {
			p.serve(l)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("apiproxy: listening on %s again: %w", p.addr, err)
}

// serve serves on l, with TLS, until l is closed.
func (p *Proxy) serve(l net.Listener) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return
	}
	p.listener = l
	p.mu.Unlock()
	p.served.Add(1)
	go func() {
		defer p.served.Done()
		_ = p.server.Serve(tls.NewListener(trackingListener{l, p}, p.tls))
	}()
}

// trackingListener keeps each connection it accepts in the proxy's set,
// so that SetDown and Close can close them all, upgraded ones included
// (which http.Server forgets once hijacked).
type trackingListener struct {
	net.Listener
	p *Proxy
}

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, p: l.p}
	l.p.mu.Lock()
	l.p.conns[tc] = struct{}{}
	l.p.mu.Unlock()
	if l.p.Down() {
		// Accepted as SetDown closed the listener: closed with the rest.
		tc.Close()
	}
	return tc, nil
}

type trackedConn struct {
	net.Conn
	p    *Proxy
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	})
	return c.Conn.Close()
}

// Close stops the proxy for good: it stops listening, closes every
// connection and waits until nothing is served.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.server.Close()
	p.closeConns()
	p.served.Wait()
	for _, t := range p.transports {
		t.CloseIdleConnections()
	}
	return err
}

// closeConns closes every connection the proxy has accepted.
func (p *Proxy) closeConns() {
	p.mu.Lock()
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}
