package faultproxy

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/connectivity"

	"github.com/csisim/csisim/drivers/mock"
)

// killableListener serves a driver whose death can be played as a SIGKILL
// plays it: every connection closes at once, without gRPC's goodbye, and
// the socket goes.
type killableListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *killableListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *killableListener) kill() {
	l.Listener.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
}

// Once WaitDisconnected has returned after the driver died, the proxy's
// connection to it is no longer Ready: the next call dials again and finds
// no socket, as a call to a dead driver does, never the dead connection's
// EOF. Right after the kill the connection can still be Ready (the proxy
// has not yet read its end), more often on a loaded machine.
func TestWaitDisconnectedSeesTheDriverGo(t *testing.T) {
	for i := range 50 {
		dir := socketDir(t)
		d, err := mock.New(mock.Config{NodeID: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		inner, err := net.Listen("unix", filepath.Join(dir, "driver.sock"))
		if err != nil {
			t.Fatal(err)
		}
		lis := &killableListener{Listener: inner}
		srv := d.NewServer()
		go srv.Serve(lis)
		p, err := Start(context.Background(), Config{Listen: "unix://" + filepath.Join(dir, "proxy.sock"), Target: "unix://" + filepath.Join(dir, "driver.sock")})
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		if _, err := csi.NewIdentityClient(dial(t, p.Endpoint())).Probe(ctx, &csi.ProbeRequest{}); err != nil {
			t.Fatalf("probe of the live driver: %v", err)
		}
		lis.kill()
		if err := p.WaitDisconnected(ctx); err != nil {
			t.Fatal(err)
		}
		if state := p.target.GetState(); state == connectivity.Ready {
			t.Fatalf("attempt %d: the connection to the dead driver is still %s", i, state)
		}
		p.Stop()
		srv.Stop()
	}
}
