package apiproxy

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/csisim/csisim/internal/apifault"
)

// authority is a test certificate authority.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newAuthority(t *testing.T, cn string) *authority {
	t.Helper()
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	cert, key := issue(t, tmpl, nil)
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	return &authority{cert: cert.Leaf, key: key, pool: pool}
}

// issue signs tmpl with parent (self-signed when nil).
func issue(t *testing.T, tmpl *x509.Certificate, parent *authority) (tls.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, key.Public(), signerKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, key
}

func (a *authority) client(t *testing.T, cn string, groups ...string) tls.Certificate {
	c, _ := issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: cn, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, a)
	return c
}

func (a *authority) server(t *testing.T) tls.Certificate {
	c, _ := issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}, a)
	return c
}

// seen is what the backend saw of a request.
type seen struct {
	Method, Path, UserAgent string
	// Peer is the CN of the certificate the proxy presented, "" for none.
	Peer, User, Auth, CredentialID string
	Groups                         []string
}

// rig is a proxy in front of an httptest backend that stands for
// kube-apiserver.
type rig struct {
	ca, frontCA *authority
	proxy       *Proxy
	backend     *httptest.Server
	// watchEnded is closed when the backend's first watch request has
	// ended.
	watchEnded chan struct{}
	watchOnce  sync.Once
	requests   atomic.Int64
}

func newRig(t *testing.T, component func(Client) string) *rig {
	t.Helper()
	r := &rig{ca: newAuthority(t, "cluster-ca"), frontCA: newAuthority(t, "front-proxy-ca"), watchEnded: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/namespaces/default/pods", r.echo)
	mux.HandleFunc("/api/v1/namespaces/default/events", r.echo)
	mux.HandleFunc("/api/v1/pods", r.watch)
	mux.HandleFunc("/api/v1/namespaces/default/pods/app/exec", upgradeEcho)
	r.backend = httptest.NewUnstartedServer(mux)
	r.backend.TLS = &tls.Config{Certificates: []tls.Certificate{r.ca.server(t)}, ClientCAs: r.frontCA.pool,
		ClientAuth: tls.VerifyClientCertIfGiven}
	r.backend.EnableHTTP2 = true
	r.backend.StartTLS()
	t.Cleanup(r.backend.Close)
	var err error
	r.proxy, err = Start(Config{Backend: r.backend.URL, Serving: r.ca.server(t), ClientCAs: r.ca.pool,
		BackendCAs: r.ca.pool, FrontProxy: r.frontCA.client(t, "front-proxy-client"), Component: component})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.proxy.Close() })
	return r
}

func (r *rig) echo(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	s := seen{Method: req.Method, Path: req.URL.Path, UserAgent: req.UserAgent(), User: req.Header.Get(userHeader),
		Groups: req.Header.Values(groupHeader), Auth: req.Header.Get("Authorization"),
		CredentialID: req.Header.Get(extraHeaderPrefix + "authentication.kubernetes.io%2fcredential-id")}
	if len(req.TLS.PeerCertificates) > 0 {
		s.Peer = req.TLS.PeerCertificates[0].Subject.CommonName
	}
	_ = json.NewEncoder(w).Encode(s)
}

// watch sends one event and holds the stream open until the client goes.
func (r *rig) watch(w http.ResponseWriter, req *http.Request) {
	defer r.watchOnce.Do(func() { close(r.watchEnded) })
	fmt.Fprintln(w, `{"type":"ADDED"}`)
	w.(http.Flusher).Flush()
	<-req.Context().Done()
}

// upgradeEcho switches protocols, as exec does, and echoes each line.
func upgradeEcho(w http.ResponseWriter, req *http.Request) {
	if req.Header.Get("Upgrade") != "test-stream" {
		http.Error(w, "no upgrade", http.StatusBadRequest)
		return
	}
	conn, rw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test-stream\r\n\r\n")
	rw.Flush()
	for {
		line, err := rw.ReadString('\n')
		if err != nil {
			return
		}
		fmt.Fprint(rw, "echo "+line)
		rw.Flush()
	}
}

// client is an HTTP/2 client of the proxy, with cert if given.
func (r *rig) client(cert *tls.Certificate) *http.Client {
	cfg := &tls.Config{RootCAs: r.ca.pool}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
}

func do(t *testing.T, c *http.Client, method, url, userAgent string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", userAgent)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp
}

func decode(t *testing.T, resp *http.Response) seen {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("HTTP %d: %s", resp.StatusCode, b)
	}
	var s seen
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestIdentityPassesOn(t *testing.T) {
	r := newRig(t, nil)
	pods := r.proxy.URL() + "/api/v1/namespaces/default/pods"
	cert := r.ca.client(t, "system:node:node-1", "system:nodes")

	// A client with a certificate: named by request-header
	// authentication, a forged claim of its own replaced.
	got := decode(t, do(t, r.client(&cert), http.MethodGet, pods, "kubelet/v1.37.2", userHeader, "system:admin", extraHeaderPrefix+"Forged", "x"))
	if got.Peer != "front-proxy-client" || got.User != "system:node:node-1" || strings.Join(got.Groups, ",") != "system:nodes" {
		t.Errorf("backend saw peer %q user %q groups %v, want front-proxy-client, system:node:node-1, [system:nodes]", got.Peer, got.User, got.Groups)
	}
	if !strings.HasPrefix(got.CredentialID, "X509SHA256=") || got.UserAgent != "kubelet/v1.37.2" || got.Method != http.MethodGet {
		t.Errorf("backend saw credential ID %q, user agent %q, method %s", got.CredentialID, got.UserAgent, got.Method)
	}

	// A client with a bearer token: passed on as it is, with no
	// certificate and no claim of its own.
	got = decode(t, do(t, r.client(nil), http.MethodPost, pods, "kube-controller-manager/v1.37.2", "Authorization", "Bearer abc", userHeader, "system:admin"))
	if got.Peer != "" || got.User != "" || got.Auth != "Bearer abc" || got.Method != http.MethodPost {
		t.Errorf("backend saw peer %q user %q authorization %q method %s, want no certificate, no user, the token, POST", got.Peer, got.User, got.Auth, got.Method)
	}
}

func TestDownRefusesConnectionsAndEndsWatches(t *testing.T) {
	r := newRig(t, nil)
	c := r.client(nil)
	resp := do(t, c, http.MethodGet, r.proxy.URL()+"/api/v1/pods?watch=true", "watcher")
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	// The first event arrives while the backend holds the stream open:
	// the proxy streams.
	if line, err := events.ReadString('\n'); err != nil || !strings.Contains(line, "ADDED") {
		t.Fatalf("first watch event: %q, %v", line, err)
	}

	if err := r.proxy.SetDown(true); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := events.ReadString('\n')
		ended <- err
	}()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the watch goes on after SetDown")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch stream was not closed when the proxy stopped")
	}
	select {
	case <-r.watchEnded:
	case <-time.After(10 * time.Second):
		t.Fatal("the backend's watch request did not end when the proxy stopped")
	}
	_, err := net.Dial("tcp", strings.TrimPrefix(r.proxy.URL(), "https://"))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial while down: %v, want connection refused", err)
	}
	c.CloseIdleConnections()
	if _, err := c.Get(r.proxy.URL() + "/api/v1/namespaces/default/pods"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("request while down: %v, want connection refused", err)
	}

	if err := r.proxy.SetDown(false); err != nil {
		t.Fatal(err)
	}
	if got := decode(t, do(t, c, http.MethodGet, r.proxy.URL()+"/api/v1/namespaces/default/pods", "after")); got.UserAgent != "after" {
		t.Errorf("after SetDown(false) the backend saw %+v", got)
	}
}

func TestThrottleAnswers429WithRetryAfter(t *testing.T) {
	r := newRig(t, nil)
	c := r.client(nil)
	pods := r.proxy.URL() + "/api/v1/namespaces/default/pods"
	r.proxy.Throttle("", 2, 3*time.Second)
	for i := range 2 {
		resp := do(t, c, http.MethodGet, pods, "csi-provisioner/v6.4.0")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3" ||
			strings.TrimSpace(string(body)) != apifault.TooManyRequestsMessage {
			t.Fatalf("request %d: HTTP %d, Retry-After %q, body %q; want 429, 3, %q", i+1, resp.StatusCode, resp.Header.Get("Retry-After"), body, apifault.TooManyRequestsMessage)
		}
	}
	if n := r.requests.Load(); n != 0 {
		t.Errorf("the backend saw %d throttled requests", n)
	}
	if n := r.proxy.PendingThrottled(""); n != 0 {
		t.Errorf("%d requests still to throttle after 2 of 2", n)
	}
	decode(t, do(t, c, http.MethodGet, pods, "csi-provisioner/v6.4.0"))

	// Until ended; Events pass.
	r.proxy.Throttle("", -1, time.Second)
	decode(t, do(t, c, http.MethodPost, r.proxy.URL()+"/api/v1/namespaces/default/events", "csi-provisioner/v6.4.0"))
	if resp := do(t, c, http.MethodGet, pods, "csi-provisioner/v6.4.0"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("throttled until ended: HTTP %d", resp.StatusCode)
	}
	r.proxy.Throttle("", 0, 0)
	decode(t, do(t, c, http.MethodGet, pods, "csi-provisioner/v6.4.0"))
}

func TestSlowWritesDelaysWritesOnly(t *testing.T) {
	const latency = 2 * time.Second
	r := newRig(t, nil)
	c := r.client(nil)
	pods := r.proxy.URL() + "/api/v1/namespaces/default/pods"
	decode(t, do(t, c, http.MethodGet, pods, "warm-up")) // the connection, made once
	r.proxy.SlowWrites("", latency)
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodGet} {
		start := time.Now()
		decode(t, do(t, c, method, pods, "writer"))
		took := time.Since(start)
		if write := method != http.MethodGet; write != (took >= latency) {
			t.Errorf("%s took %s with writes slowed by %s", method, took, latency)
		}
	}
	r.proxy.SlowWrites("", 0)
	start := time.Now()
	decode(t, do(t, c, http.MethodPost, pods, "writer"))
	if took := time.Since(start); took >= latency {
		t.Errorf("POST took %s after the slow writes ended", took)
	}
}

func TestFaultsStrikeTheComponentNamed(t *testing.T) {
	// The component of a request: the account a token's user agent
	// names, else the first word of the user agent.
	component := func(c Client) string {
		if i := strings.LastIndex(c.UserAgent, "/system:serviceaccount:kube-system:"); i >= 0 {
			return c.UserAgent[i+len("/system:serviceaccount:kube-system:"):]
		}
		return FirstWord(c)
	}
	r := newRig(t, component)
	c := r.client(nil)
	pods := r.proxy.URL() + "/api/v1/namespaces/default/pods"
	binder := "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:persistent-volume-binder"
	attacher := "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:attachdetach-controller"
	r.proxy.Throttle("persistent-volume-binder", 1, time.Second)
	decode(t, do(t, c, http.MethodGet, pods, attacher))
	decode(t, do(t, c, http.MethodGet, pods, "csi-provisioner/v6.4.0"))
	if resp := do(t, c, http.MethodGet, pods, binder); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the binder's request: HTTP %d, want 429", resp.StatusCode)
	}
	decode(t, do(t, c, http.MethodGet, pods, binder))

	r.proxy.SlowWrites("csi-provisioner", 2*time.Second)
	start := time.Now()
	decode(t, do(t, c, http.MethodPost, pods, "csi-attacher/v4.13.0"))
	if took := time.Since(start); took >= 2*time.Second {
		t.Errorf("csi-attacher's write took %s while only csi-provisioner's are slowed", took)
	}
	start = time.Now()
	decode(t, do(t, c, http.MethodPost, pods, "csi-provisioner/v6.4.0"))
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("csi-provisioner's write took %s while its writes are slowed by 2s", took)
	}
}

func TestUpgradeStreams(t *testing.T) {
	r := newRig(t, nil)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(r.proxy.URL(), "https://"), &tls.Config{RootCAs: r.ca.pool, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "POST /api/v1/namespaces/default/pods/app/exec HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test-stream\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v, %v", resp, err)
	}
	for _, line := range []string{"one", "two"} {
		fmt.Fprintln(conn, line)
		got, err := br.ReadString('\n')
		if err != nil || got != "echo "+line+"\n" {
			t.Fatalf("after %q through the upgraded connection: %q, %v", line, got, err)
		}
	}
	// A stopped server ends an upgraded connection too.
	if err := r.proxy.SetDown(true); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := br.ReadString('\n'); err == nil || errors.Is(err, syscall.ETIMEDOUT) || isTimeout(err) {
		t.Fatalf("the upgraded connection goes on after SetDown: %q, %v", got, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestWatchFromBeforeTheOutageIsGone(t *testing.T) {
	r := newRig(t, nil)
	r.proxy.cfg.ResourceVersion = func(context.Context) (uint64, error) { return 100, nil }
	c := r.client(nil)
	watchFrom := func(query string) string {
		t.Helper()
		resp := do(t, c, http.MethodGet, r.proxy.URL()+"/api/v1/pods?watch=true&"+query, "watcher")
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("watch %s: HTTP %d", query, resp.StatusCode)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil {
			t.Fatalf("watch %s: %v", query, err)
		}
		return strings.TrimSpace(line)
	}
	const served = `{"type":"ADDED"}`
	if got := watchFrom("resourceVersion=50"); got != served {
		t.Fatalf("a watch before any outage: %s, want it served", got)
	}
	if err := r.proxy.SetDown(true); err != nil {
		t.Fatal(err)
	}
	if err := r.proxy.SetDown(false); err != nil {
		t.Fatal(err)
	}
	c.CloseIdleConnections() // closed by the outage
	var ev struct {
		Type   string
		Object struct {
			Kind, Status, Message, Reason string
			Code                          int
		}
	}
	got := watchFrom("resourceVersion=50")
	if err := json.Unmarshal([]byte(got), &ev); err != nil {
		t.Fatalf("a watch from before the outage: %s: %v", got, err)
	}
	if ev.Type != "ERROR" || ev.Object.Kind != "Status" || ev.Object.Code != http.StatusGone || ev.Object.Reason != "Expired" ||
		ev.Object.Message != "too old resource version: 50 (100)" {
		t.Errorf("a watch from before the outage: %s, want an ERROR event, 410 Expired, too old resource version: 50 (100)", got)
	}
	for _, query := range []string{"resourceVersion=100", "resourceVersion=0", "resourceVersion=50&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", ""} {
		if got := watchFrom(query); got != served {
			t.Errorf("watch %q after the outage: %s, want it served", query, got)
		}
	}
}
