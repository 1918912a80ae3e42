// The transport under the proxy: a codec that passes bytes through, and a
// listener that can close the connection a call came on.

package faultproxy

import (
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc/mem"
)

// rawCodec passes messages through as bytes. It calls itself "proto" so
// that the content type on the wire stays application/grpc+proto, which
// every driver understands.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("faultproxy codec: cannot send %T", v)
	}
	if len(*b) == 0 {
		return nil, nil
	}
	return mem.BufferSlice{mem.SliceBuffer(*b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("faultproxy codec: cannot receive into %T", v)
	}
	// Materialize copies: grpc frees data when Unmarshal returns.
	*b = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// trackingListener gives every accepted connection a unique address, so a
// call's peer address leads back to its connection and the drop action can
// close it.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	next  uint64
	conns map[uint64]*trackedConn
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	tc := &trackedConn{Conn: c, l: l, addr: &connAddr{id: l.next, inner: c.RemoteAddr()}}
	l.conns[l.next] = tc
	return tc, nil
}

// closeConn closes a connection abruptly, without a goodbye to its client.
func (l *trackingListener) closeConn(id uint64) {
	l.mu.Lock()
	c := l.conns[id]
	l.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

func (l *trackingListener) forget(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, id)
}

type trackedConn struct {
	net.Conn
	l    *trackingListener
	addr *connAddr
	once sync.Once
}

func (c *trackedConn) RemoteAddr() net.Addr { return c.addr }

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.l.forget(c.addr.id) })
	return c.Conn.Close()
}

// connAddr is a connection's peer address made unique by a number: unix
// socket clients are usually unnamed, so their own addresses are all alike.
type connAddr struct {
	id    uint64
	inner net.Addr
}

func (a *connAddr) Network() string { return "unix" }
func (a *connAddr) String() string  { return fmt.Sprintf("%v#%d", a.inner, a.id) }
