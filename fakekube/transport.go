package fakekube

import (
	"context"
	"io"
	"net/http"
	"sync"
)

// inProcessTransport is an http.RoundTripper that calls a handler directly.
// Responses stream through a pipe, so watches work as they do over a socket.
type inProcessTransport struct {
	handler http.Handler
}

func (t *inProcessTransport) RoundTrip(req *http.Request) (*http.Response, error) {
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
	return &http.Response{
		Status:     http.StatusText(rw.status),
		StatusCode: rw.status,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     rw.sent,
		Body:       &cancelOnClose{ReadCloser: pr, cancel: cancel},
		Request:    req,
	}, nil
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
