package fakekube

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
)

// inProcessTransport is an http.RoundTripper that calls a handler directly.
// Responses stream through a pipe, so watches work as they do over a socket.
type inProcessTransport struct {
	handler http.Handler
	// server refuses the connection while it is down, and takes a
	// client's Retry-After wait on its clock (outage.go); actor is the
	// client's name there.
	server *Server
	actor  string
}

func (t *inProcessTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.server.refusesConnection(t.actor) {
		return nil, connectionRefused()
	}
	req = markInProcess(req)
	if q := req.URL.Query().Get("watch"); q != "true" && q != "1" {
		return t.roundTripBuffered(req)
	}
	ctx, cancel := context.WithCancel(req.Context())
	req = req.Clone(ctx)
	if req.Body == nil {
		req.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	rw := &pipeResponseWriter{header: http.Header{}, body: pw, headerSent: make(chan struct{})}
	go func() {
		defer func() {
			rw.sendHeader()
			_ = pw.Close()
		}()
		t.handler.ServeHTTP(rw, req)
	}()
	select {
	case <-rw.headerSent:
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
	resp := &http.Response{
		Status:     http.StatusText(rw.status),
		StatusCode: rw.status,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     rw.sent,
		Body:       &cancelOnClose{ReadCloser: pr, cancel: cancel},
		Request:    req,
	}
	t.server.waitRetryAfter(resp)
	return resp, nil
}

// cancelOnClose ends the handler's request context when the client closes
// the body, as a closed connection would.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	c.cancel()
	return c.ReadCloser.Close()
}

// pipeResponseWriter hands the status and headers to RoundTrip as soon as
// they are final, and streams the body through the pipe.
type pipeResponseWriter struct {
	header     http.Header
	sent       http.Header // the header as it was when the status was written
	body       *io.PipeWriter
	status     int
	once       sync.Once
	headerSent chan struct{}
}

func (w *pipeResponseWriter) Header() http.Header { return w.header }

func (w *pipeResponseWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.status = code
		// Copy so later changes by the handler cannot race with the client.
		w.sent = w.header.Clone()
		close(w.headerSent)
	})
}

func (w *pipeResponseWriter) sendHeader() { w.WriteHeader(http.StatusOK) }

func (w *pipeResponseWriter) Write(p []byte) (int, error) {
	w.sendHeader()
	return w.body.Write(p)
}

// Flush is a no-op: every Write already reaches the reader.
func (w *pipeResponseWriter) Flush() {}

// roundTripBuffered serves a request that is not a watch in the caller's
// goroutine, into a buffer: no pipe, no goroutine per request.
func (t *inProcessTransport) roundTripBuffered(req *http.Request) (*http.Response, error) {
	if req.Body == nil {
		req = req.Clone(req.Context())
		req.Body = http.NoBody
	}
	rw := &bufferResponseWriter{header: http.Header{}}
	t.handler.ServeHTTP(rw, req)
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	resp := &http.Response{
		Status:        http.StatusText(rw.status),
		StatusCode:    rw.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rw.header,
		Body:          io.NopCloser(&rw.body),
		ContentLength: int64(rw.body.Len()),
		Request:       req,
	}
	t.server.waitRetryAfter(resp)
	return resp, nil
}

// bufferResponseWriter collects a whole response in memory.
type bufferResponseWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferResponseWriter) Header() http.Header { return w.header }

func (w *bufferResponseWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *bufferResponseWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}
