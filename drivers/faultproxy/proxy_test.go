package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/mock"
	"github.com/csisim/csisim/trace"
)

// socketDir returns a short directory for sockets: t.TempDir's path, named
// after the test, can exceed the 108 bytes a unix socket path may have.
func socketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// env is a mock driver with the proxy in front of it and a client that
// talks to the proxy.
type env struct {
	proxy   *Proxy
	backend *mock.Backend
	conn    *grpc.ClientConn
	id      csi.IdentityClient
	ctrl    csi.ControllerClient
	node    csi.NodeClient
	// driverEndpoint is the driver's own socket, for direct calls.
	driverEndpoint string

	// finished are the calls the proxy has finished, as OnCall gave them,
	// unless the test's Config has an OnCall of its own.
	mu       sync.Mutex
	finished []Call
}

// newEnv serves a mock driver (mode all, node n1, unless mcfg says
// otherwise) and starts a proxy for cfg in front of it; Listen and Target
// are filled in, and OnCall, if not set, keeps the finished calls for
// env.calls. Everything stops when the test ends.
func newEnv(t testing.TB, cfg Config, mcfg mock.Config) *env {
	t.Helper()
	e := &env{}
	if cfg.OnCall == nil {
		cfg.OnCall = func(c Call) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.finished = append(e.finished, c)
		}
	}
	dir := socketDir(t)
	if mcfg.NodeID == "" && mcfg.Mode != mock.ModeController {
		mcfg.NodeID = "n1"
	}
	d, err := mock.New(mcfg)
	if err != nil {
		t.Fatalf("mock.New: %v", err)
	}
	srv, err := d.Start(filepath.Join(dir, "driver.sock"))
	if err != nil {
		t.Fatalf("driver Start: %v", err)
	}
	t.Cleanup(func() { srv.Stop() })

	cfg.Listen = "unix://" + filepath.Join(dir, "proxy.sock")
	cfg.Target = srv.Endpoint()
	p, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("proxy Start: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("proxy Stop: %v", err)
		}
	})
	conn := dial(t, p.Endpoint())
	e.proxy, e.backend, e.conn, e.driverEndpoint = p, d.Backend(), conn, srv.Endpoint()
	e.id, e.ctrl, e.node = csi.NewIdentityClient(conn), csi.NewControllerClient(conn), csi.NewNodeClient(conn)
	return e
}

// calls are the calls the proxy has finished so far, in the order they
// finished.
func (e *env) calls() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.finished)
}

func dial(t testing.TB, endpoint string) *grpc.ClientConn {
	t.Helper()
	target := endpoint
	if !strings.HasPrefix(target, "unix:") {
		target = "unix://" + target
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", endpoint, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func errOf[T any](_ T, err error) error { return err }

var rwo = &csi.VolumeCapability{
	AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
}

// waitCalls waits until the proxy has finished n calls: a call whose
// caller gave up or lost its connection may finish a moment after the
// caller returns.
func waitCalls(t testing.TB, e *env, n int) []Call {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h := e.calls()
		if len(h) >= n {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy finished %d calls, want %d: %v", len(h), n, h)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestForwardsAllServices(t *testing.T) {
	e := newEnv(t, Config{Name: "fp-test"}, mock.Config{Name: "mock.example"})
	ctx := ctxT(t)

	info, err := e.id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || info.GetName() != "mock.example" {
		t.Fatalf("GetPluginInfo: %v, %v", info, err)
	}
	if _, err := e.id.Probe(ctx, &csi.ProbeRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.id.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctrl.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{}); err != nil {
		t.Fatal(err)
	}
	ni, err := e.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || ni.GetNodeId() != "n1" {
		t.Fatalf("NodeGetInfo: %v, %v", ni, err)
	}
	cv, err := e.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo},
		Secrets: map[string]string{"password": "hunter2"}})
	if err != nil {
		t.Fatal(err)
	}
	vol := cv.GetVolume().GetVolumeId()
	pc, err := e.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vol, NodeId: "n1", VolumeCapability: rwo})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: "/s", VolumeCapability: rwo, PublishContext: pc.GetPublishContext()}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol, StagingTargetPath: "/s", TargetPath: "/t", VolumeCapability: rwo, Readonly: true}); err != nil {
		t.Fatal(err)
	}
	// A driver's error comes through unchanged.
	_, err = e.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: "mock-none", NodeId: "n1", VolumeCapability: rwo})
	if st := status.Convert(err); st.Code() != codes.NotFound || st.Message() != "ControllerPublishVolume: volume mock-none does not exist" {
		t.Fatalf("driver error: got %v", err)
	}
	lv, err := e.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil || len(lv.GetEntries()) != 1 {
		t.Fatalf("ListVolumes: %v, %v", lv, err)
	}
	// A streaming method goes through too; the mock does not have it.
	stream, err := csi.NewSnapshotMetadataClient(e.conn).GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: "s"})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("streaming call: got %v, want the driver's Unimplemented", err)
	}
	// And so does a method the proxy has never heard of.
	if err := e.conn.Invoke(ctx, "/example.v1.Nothing/Ping", &emptypb.Empty{}, &emptypb.Empty{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("unknown method: got %v, want the driver's Unimplemented", err)
	}

	h := e.calls()
	want := []struct {
		method, volume, node, request string
		code                          codes.Code
	}{
		{"GetPluginInfo", "", "", "", codes.OK},
		{"Probe", "", "", "", codes.OK},
		{"GetPluginCapabilities", "", "", "", codes.OK},
		{"ControllerGetCapabilities", "", "", "", codes.OK},
		{"NodeGetCapabilities", "", "", "", codes.OK},
		{"NodeGetInfo", "", "", "", codes.OK},
		{"CreateVolume", vol, "", "name=pvc-1 access=SINGLE_NODE_WRITER/mount", codes.OK},
		{"ControllerPublishVolume", vol, "n1", "volume=mock-pvc-1 node=n1 access=SINGLE_NODE_WRITER/mount", codes.OK},
		{"NodeStageVolume", vol, "n1", "volume=mock-pvc-1 node=n1 staging=/s access=SINGLE_NODE_WRITER/mount", codes.OK},
		{"NodePublishVolume", vol, "n1", "volume=mock-pvc-1 node=n1 staging=/s target=/t access=SINGLE_NODE_WRITER/mount readonly", codes.OK},
		{"ControllerPublishVolume", "mock-none", "n1", "volume=mock-none node=n1 access=SINGLE_NODE_WRITER/mount", codes.NotFound},
		{"ListVolumes", "", "", "", codes.OK},
		{"GetMetadataAllocated", "", "", "(stream)", codes.Unimplemented},
		{"Ping", "", "", "(not a CSI method)", codes.Unimplemented},
	}
	if len(h) != len(want) {
		t.Fatalf("the proxy finished %d calls, want %d:\n%v", len(h), len(want), h)
	}
	for i, w := range want {
		c := h[i]
		if c.Method != w.method || c.VolumeID != w.volume || c.NodeID != w.node || c.Code != w.code || c.Request != w.request {
			t.Errorf("call %d: got %s (volume %q node %q), want %+v", i+1, c, c.VolumeID, c.NodeID, w)
		}
		if !c.Forwarded || c.Fired() {
			t.Errorf("call %d: forwarded %t, rule %q", i+1, c.Forwarded, c.Rule)
		}
	}
	if got := strings.Join(h[4].Capabilities, ","); got != "GET_VOLUME_STATS,EXPAND_VOLUME,STAGE_UNSTAGE_VOLUME" {
		t.Errorf("NodeGetCapabilities recorded %q", got)
	}
	if got := strings.Join(h[2].Capabilities, ","); got != "CONTROLLER_SERVICE" {
		t.Errorf("GetPluginCapabilities recorded %q", got)
	}
	for _, c := range h {
		if strings.Contains(c.String(), "hunter2") {
			t.Errorf("a secret reached the call's description: %s", c)
		}
	}
}

func TestActions(t *testing.T) {
	create := func(e *env, ctx context.Context, name string) error {
		return errOf(e.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{rwo}}))
	}
	for _, tc := range []struct {
		name    string
		rule    Rule
		timeout time.Duration
		// response, if set, is configured on the rule's ok action.
		response *csi.CreateVolumeResponse

		wantCode    codes.Code
		wantMsg     string
		min, max    time.Duration
		wantCreated bool // the driver did the work
		wantForward bool
		recorded    codes.Code // the code the call finished with
		check       func(t *testing.T, e *env)
	}{
		{
			name: "error", rule: Rule{Method: "CreateVolume", Action: Action{Kind: ActionError, Code: codes.Unavailable, Message: "backend busy"}},
			wantCode: codes.Unavailable, wantMsg: "backend busy", recorded: codes.Unavailable,
		},
		{
			name: "error with default message", rule: Rule{ID: "full", Method: "CreateVolume", Action: Action{Kind: ActionError, Code: codes.ResourceExhausted}},
			wantCode: codes.ResourceExhausted, wantMsg: "injected by faultproxy rule full", recorded: codes.ResourceExhausted,
		},
		{
			name: "error after forwarding loses the answer", rule: Rule{Method: "CreateVolume", Action: Action{Kind: ActionError, Code: codes.DeadlineExceeded, AfterForward: true}},
			wantCode: codes.DeadlineExceeded, wantCreated: true, wantForward: true, recorded: codes.DeadlineExceeded,
		},
		{
			name: "delay then forward", rule: Rule{Method: "CreateVolume", Action: Action{Kind: ActionDelay, Delay: 150 * time.Millisecond}}, timeout: 5 * time.Second,
			min: 150 * time.Millisecond, wantCreated: true, wantForward: true,
		},
		{
			name: "delay longer than the caller waits", rule: Rule{Method: "CreateVolume", Action: Action{Kind: ActionDelay, Delay: 5 * time.Second}}, timeout: 100 * time.Millisecond,
			wantCode: codes.DeadlineExceeded, max: 2 * time.Second, recorded: codes.DeadlineExceeded,
		},
		{
			name: "delay after forwarding", rule: Rule{Method: "CreateVolume", Action: Action{Kind: ActionDelay, Delay: 5 * time.Second, AfterForward: true}}, timeout: 100 * time.Millisecond,
			wantCode: codes.DeadlineExceeded, max: 2 * time.Second, wantCreated: true, wantForward: true, recorded: codes.DeadlineExceeded,
		},
		{
			name: "hang until the caller's deadline", rule: Rule{Method: "CreateVolume", Action: Action{Kind: ActionHang}}, timeout: 100 * time.Millisecond,
			wantCode: codes.DeadlineExceeded, min: 100 * time.Millisecond, max: 2 * time.Second, recorded: codes.DeadlineExceeded,
		},
		{
			name: "hang with a limit", rule: Rule{Method: "CreateVolume", Action: Action{Kind: ActionHang, Delay: 100 * time.Millisecond}}, timeout: 5 * time.Second,
			wantCode: codes.DeadlineExceeded, wantMsg: "hung the call for 100ms", min: 100 * time.Millisecond, max: 2 * time.Second, recorded: codes.DeadlineExceeded,
		},
		{
			name: "hang after forwarding", rule: Rule{Method: "CreateVolume", Action: Action{Kind: ActionHang, AfterForward: true}}, timeout: 100 * time.Millisecond,
			wantCode: codes.DeadlineExceeded, wantCreated: true, wantForward: true, recorded: codes.DeadlineExceeded,
		},
		{
			name: "drop", rule: Rule{Method: "CreateVolume", Times: 1, Action: Action{Kind: ActionDrop}},
			wantCode: codes.Unavailable, recorded: codes.Unavailable,
			check: func(t *testing.T, e *env) {
				// The client reconnects for its next call.
				if err := create(e, ctxT(t), "next"); err != nil {
					t.Fatalf("call after the drop: %v", err)
				}
			},
		},
		{
			name: "drop after forwarding", rule: Rule{Method: "CreateVolume", Action: Action{Kind: ActionDrop, AfterForward: true}},
			wantCode: codes.Unavailable, wantCreated: true, wantForward: true, recorded: codes.Unavailable,
		},
		{
			name: "ok without forwarding", rule: Rule{Method: "CreateVolume", Action: Action{Kind: ActionOK}},
			check: func(t *testing.T, e *env) {
				if h := e.calls(); h[0].VolumeID != "" {
					t.Fatalf("empty answer recorded volume %q", h[0].VolumeID)
				}
			},
		},
		{
			name: "ok with a configured response", rule: Rule{Method: "CreateVolume", Action: Action{Kind: ActionOK}},
			response: &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "fake-1", CapacityBytes: 42}},
			check: func(t *testing.T, e *env) {
				if h := e.calls(); h[0].VolumeID != "fake-1" {
					t.Fatalf("the call has volume %q, want the configured fake-1", h[0].VolumeID)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rule
			if tc.response != nil {
				r.Action.Response = tc.response
			}
			e := newEnv(t, Config{Rules: []Rule{r}}, mock.Config{})
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			// The clock starts before the deadline is set, so that
			// the deadline cannot pass before start+timeout.
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			resp, err := e.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo}})
			took := time.Since(start)
			st := status.Convert(err)
			if st.Code() != tc.wantCode || !strings.Contains(st.Message(), tc.wantMsg) {
				t.Fatalf("got %v, want %v with %q", err, tc.wantCode, tc.wantMsg)
			}
			if took < tc.min || (tc.max > 0 && took > tc.max) {
				t.Fatalf("took %s, want %s..%s", took, tc.min, tc.max)
			}
			if tc.response != nil && resp.GetVolume().GetVolumeId() != tc.response.GetVolume().GetVolumeId() {
				t.Fatalf("answer %v, want the configured %v", resp, tc.response)
			}
			h := waitCalls(t, e, 1)
			c := h[0]
			if c.Rule == "" || c.Action != r.Action.Kind || c.Forwarded != tc.wantForward || c.Code != tc.recorded {
				t.Fatalf("call: %s (forwarded %t), want rule fired, action %v, forwarded %t, code %v", c, c.Forwarded, r.Action.Kind, tc.wantForward, tc.recorded)
			}
			// The driver may finish a forwarded call after the
			// caller gave up, so wait for it a little.
			created := func() bool { _, ok := e.backend.Volume("mock-pvc-1"); return ok }
			if tc.wantCreated {
				deadline := time.Now().Add(2 * time.Second)
				for !created() {
					if time.Now().After(deadline) {
						t.Fatal("the driver never created the volume")
					}
					time.Sleep(5 * time.Millisecond)
				}
			} else if created() {
				t.Fatal("the driver created the volume")
			}
			if tc.check != nil {
				tc.check(t, e)
			}
		})
	}
}

// callSeq issues a fixed sequence of calls, each of which succeeds when
// forwarded, and returns which failed: "." for success, "x" for failure.
// Calls 1-3 concern volume a, 4-6 volume b, on the proxy's node n1; every
// third is a NodeUnstageVolume, the others NodeUnpublishVolume; and call 7
// is CreateVolume named c.
func callSeq(t *testing.T, e *env) string {
	t.Helper()
	ctx := ctxT(t)
	var out strings.Builder
	note := func(err error) {
		if err != nil {
			if status.Code(err) != codes.Aborted {
				t.Fatalf("unexpected error %v", err)
			}
			out.WriteByte('x')
		} else {
			out.WriteByte('.')
		}
	}
	for i := range 6 {
		vol := "a"
		if i >= 3 {
			vol = "b"
		}
		if i%3 == 2 {
			note(errOf(e.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: "/s"})))
		} else {
			note(errOf(e.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol, TargetPath: fmt.Sprintf("/t%d", i)})))
		}
	}
	note(errOf(e.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "c", VolumeCapabilities: []*csi.VolumeCapability{rwo}})))
	return out.String()
}

func TestMatchers(t *testing.T) {
	// aborted is a rule that aborts the calls it selects.
	aborted := func(r Rule) Rule { r.Action = Action{Kind: ActionError, Code: codes.Aborted}; return r }
	for _, tc := range []struct {
		name  string
		rules []Rule
		want  string
	}{
		{"no rules", nil, "......."},
		{"exact method", []Rule{aborted(Rule{Method: "NodeUnstageVolume"})}, "..x..x."},
		{"every method", []Rule{aborted(Rule{Method: "*"})}, "xxxxxxx"},
		{"glob", []Rule{aborted(Rule{Method: "NodeUn*"})}, "xxxxxx."},
		{"full name pattern", []Rule{aborted(Rule{Method: "/csi.v1.Node/*"})}, "xxxxxx."},
		{"full name of another service", []Rule{aborted(Rule{Method: "/csi.v1.Controller/*"})}, "......x"},
		{"volume", []Rule{aborted(Rule{Method: "*", VolumeID: "b"})}, "...xxx."},
		{"CreateVolume by name", []Rule{aborted(Rule{Method: "*", VolumeID: "c"})}, "......x"},
		{"node", []Rule{aborted(Rule{Method: "*", NodeID: "n1"})}, "xxxxxx."},
		{"other node", []Rule{aborted(Rule{Method: "*", NodeID: "n2"})}, "......."},
		{"nth only", []Rule{aborted(Rule{Method: "NodeUnpublishVolume", Nth: 3, Times: 1})}, "...x..."},
		{"from the nth", []Rule{aborted(Rule{Method: "NodeUnpublishVolume", Nth: 3})}, "...xx.."},
		{"n times", []Rule{aborted(Rule{Method: "*", Times: 2})}, "xx....."},
		{"nth of a volume", []Rule{aborted(Rule{Method: "*", VolumeID: "a", Nth: 2, Times: 1})}, ".x....."},
		{"a rule an earlier one beat keeps its budget", []Rule{aborted(Rule{Method: "*", Nth: 2, Times: 1}), aborted(Rule{Method: "*", Nth: 2, Times: 1})}, ".xx...."},
		{"second rule fires where the first does not", []Rule{aborted(Rule{Method: "*", VolumeID: "a"}), aborted(Rule{Method: "*", Nth: 5})}, "xxx.xxx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{NodeID: "n1", Rules: tc.rules}, mock.Config{})
			if got := callSeq(t, e); got != tc.want {
				t.Fatalf("failed calls %s, want %s", got, tc.want)
			}
			fired := 0
			for _, c := range e.calls() {
				if c.Fired() {
					fired++
				}
			}
			if want := strings.Count(tc.want, "x"); fired != want {
				t.Fatalf("the calls show %d rules fired, want %d", fired, want)
			}
		})
	}
}

func TestProbabilityIsSeeded(t *testing.T) {
	pattern := func(seed uint64) string {
		e := newEnv(t, Config{Seed: seed, Rules: []Rule{{ID: "flaky", Method: "Probe", Probability: 0.3, Action: Action{Kind: ActionError, Code: codes.Unavailable}}}}, mock.Config{})
		ctx := ctxT(t)
		var b strings.Builder
		for range 200 {
			if _, err := e.id.Probe(ctx, &csi.ProbeRequest{}); err != nil {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		rs := e.proxy.Rules()
		if rs[0].Matched != 200 || rs[0].Fired != strings.Count(b.String(), "x") {
			t.Fatalf("rule counters %+v for %s", rs[0], b.String())
		}
		return b.String()
	}
	a, b, c := pattern(42), pattern(42), pattern(7)
	if a != b {
		t.Fatalf("same seed, different calls failed:\n%s\n%s", a, b)
	}
	if a == c {
		t.Fatalf("different seeds, same calls failed: %s", a)
	}
	// 200 draws at 0.3: 60 expected; the seed makes this exact, the
	// bounds only guard against a generator that ignores the chance.
	if n := strings.Count(a, "x"); n < 35 || n > 85 {
		t.Fatalf("%d of 200 calls failed at probability 0.3", n)
	}
}

func TestRulesChangeWhileRunning(t *testing.T) {
	e := newEnv(t, Config{}, mock.Config{})
	ctx := ctxT(t)
	probe := func() codes.Code { return status.Code(errOf(e.id.Probe(ctx, &csi.ProbeRequest{}))) }

	// Callers keep calling while the rules change under them; the race
	// detector watches.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = e.id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
			}
		}()
	}
	for i := range 50 {
		id, err := e.proxy.AddRule(Rule{Method: "GetPluginInfo", Action: Action{Kind: ActionError, Code: codes.Unavailable}})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			e.proxy.RemoveRule(id)
		} else {
			e.proxy.Clear()
		}
		_ = e.proxy.Rules()
	}
	close(stop)
	wg.Wait()

	steps := []struct {
		name   string
		change func() error
		want   codes.Code
	}{
		{"no rules", func() error { return nil }, codes.OK},
		{"added", func() error {
			_, err := e.proxy.AddRule(Rule{ID: "down", Method: "Probe", Action: Action{Kind: ActionError, Code: codes.Unavailable}})
			return err
		}, codes.Unavailable},
		{"duplicate ID refused", func() error {
			_, err := e.proxy.AddRule(Rule{ID: "down", Method: "Probe", Action: Action{Kind: ActionDrop}})
			if err == nil || !strings.Contains(err.Error(), "duplicate") {
				return fmt.Errorf("duplicate accepted: %v", err)
			}
			return nil
		}, codes.Unavailable},
		{"removed", func() error {
			if !e.proxy.RemoveRule("down") || e.proxy.RemoveRule("down") {
				return errors.New("RemoveRule did not report removal once")
			}
			return nil
		}, codes.OK},
		{"replaced", func() error {
			return e.proxy.SetRules(Rule{Method: "Probe", Action: Action{Kind: ActionError, Code: codes.Internal}})
		}, codes.Internal},
		{"invalid set changes nothing", func() error {
			err := e.proxy.SetRules(Rule{Method: "Probe", Action: Action{Kind: ActionOK}}, Rule{Method: "Prob", Action: Action{Kind: ActionDrop}})
			if err == nil || !strings.Contains(err.Error(), "not a CSI method") {
				return fmt.Errorf("invalid rules accepted: %v", err)
			}
			return nil
		}, codes.Internal},
		{"cleared", func() error { e.proxy.Clear(); return nil }, codes.OK},
	}
	for _, s := range steps {
		if err := s.change(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := probe(); got != s.want {
			t.Fatalf("%s: Probe got %v, want %v", s.name, got, s.want)
		}
	}

	// SetRules resets counters and names rules without IDs around the
	// ones that have them.
	if err := e.proxy.SetRules(
		Rule{Method: "Probe", Nth: 2, Times: 1, Action: Action{Kind: ActionError, Code: codes.Aborted}},
		Rule{ID: "rule-99", Method: "Probe", Action: Action{Kind: ActionDelay, Delay: time.Millisecond}},
	); err != nil {
		t.Fatal(err)
	}
	got := []codes.Code{probe(), probe(), probe()}
	if got[0] != codes.OK || got[1] != codes.Aborted || got[2] != codes.OK {
		t.Fatalf("after SetRules: %v", got)
	}
	rs := e.proxy.Rules()
	if len(rs) != 2 || rs[0].ID == "" || rs[0].ID == "rule-99" || rs[0].Matched != 3 || rs[0].Fired != 1 || rs[1].Fired != 2 {
		t.Fatalf("rules: %+v", rs)
	}
}

func TestStopEndsHangs(t *testing.T) {
	e := newEnv(t, Config{Rules: []Rule{{Method: "Probe", Action: Action{Kind: ActionHang}}}}, mock.Config{})
	errc := make(chan error, 1)
	go func() { errc <- errOf(e.id.Probe(context.Background(), &csi.ProbeRequest{})) }()
	waitRule(t, e.proxy, 1)
	start := time.Now()
	if err := e.proxy.Stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Stop took %s with a hanging call", took)
	}
	select {
	case err := <-errc:
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("hanging caller got %v, want Unavailable", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("hanging call did not end with the proxy")
	}
	if _, err := os.Stat(strings.TrimPrefix(e.proxy.Endpoint(), "unix://")); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// waitRule waits until the first rule has fired n times.
func waitRule(t *testing.T, p *Proxy, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.Rules()[0].Fired < n {
		if time.Now().After(deadline) {
			t.Fatalf("rule fired %d times, want %d", p.Rules()[0].Fired, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestStartStopsWithContext(t *testing.T) {
	dir := socketDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	p, err := Start(ctx, Config{Listen: filepath.Join(dir, "p.sock"), Target: filepath.Join(dir, "nobody.sock")})
	if err != nil {
		t.Fatal(err)
	}
	// No driver behind it: calls fail as they would without the proxy.
	conn := dial(t, p.Endpoint())
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()
	if _, err := csi.NewIdentityClient(conn).Probe(cctx, &csi.ProbeRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("no driver: got %v, want Unavailable", err)
	}
	cancel()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		t.Fatal("proxy did not stop with its context")
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	dir := socketDir(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no target", Config{Listen: filepath.Join(dir, "a.sock")}, "target"},
		{"tcp target", Config{Listen: filepath.Join(dir, "a.sock"), Target: "tcp://localhost:1"}, "only unix"},
		{"no listen", Config{Target: filepath.Join(dir, "t.sock")}, "listen"},
		{"bad rule", Config{Listen: filepath.Join(dir, "a.sock"), Target: filepath.Join(dir, "t.sock"), Rules: []Rule{{Method: "Probe"}}}, "unknown action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(context.Background(), tc.cfg)
			if err == nil {
				p.Stop()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestFiredRulesReachTheTimeline(t *testing.T) {
	rec := trace.New(clock.RealClock{})
	e := newEnv(t, Config{Name: "ctrl-proxy", Recorder: rec, Rules: []Rule{{ID: "busy", Method: "CreateVolume", Times: 1, Action: Action{Kind: ActionError, Code: codes.Unavailable}}}}, mock.Config{})
	ctx := ctxT(t)
	for range 2 {
		_, _ = e.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo}})
	}
	faults := rec.Filter(trace.Fault)
	if len(faults) != 1 {
		t.Fatalf("timeline has %d faults, want 1: %v", len(faults), faults)
	}
	f := faults[0]
	if f.Actor != "ctrl-proxy" || f.Verb != "CreateVolume" || f.Object != "pvc-1" || !strings.Contains(f.Detail, "rule CreateVolume times=1 error=Unavailable id=busy") {
		t.Fatalf("fault entry: %s", f)
	}
}

func TestOnCallSeesEveryFinishedCall(t *testing.T) {
	var mu sync.Mutex
	var seen []Call
	e := newEnv(t, Config{OnCall: func(c Call) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, c)
	}}, mock.Config{})
	ctx := ctxT(t)
	resp, err := e.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo}})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = e.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("OnCall saw %d calls, want 2: %v", len(seen), seen)
	}
	if c := seen[0]; c.Method != "CreateVolume" || c.Name != "pvc-1" || c.VolumeID != resp.GetVolume().GetVolumeId() || c.Code != codes.OK {
		t.Errorf("first call: %s", c)
	}
	if c := seen[1]; c.Method != "DeleteVolume" || c.Code != codes.InvalidArgument {
		t.Errorf("second call: %s", c)
	}
}

func TestOKResponseTypeChecked(t *testing.T) {
	// A pattern rule cannot be checked when added; the wrong type is
	// reported to the caller when it fires.
	e := newEnv(t, Config{Rules: []Rule{{Method: "*", Action: Action{Kind: ActionOK, Response: &csi.ProbeResponse{}}}}}, mock.Config{})
	_, err := e.id.GetPluginInfo(ctxT(t), &csi.GetPluginInfoRequest{})
	if st := status.Convert(err); st.Code() != codes.Internal || !strings.Contains(st.Message(), "csi.v1.ProbeResponse") {
		t.Fatalf("got %v", err)
	}
	if _, err := e.id.Probe(ctxT(t), &csi.ProbeRequest{}); err != nil {
		t.Fatalf("matching type: %v", err)
	}
	// An exact method is checked when the rule is added.
	_, err = e.proxy.AddRule(Rule{Method: "Probe", Action: Action{Kind: ActionOK, Response: &csi.GetPluginInfoResponse{}}})
	if err == nil || !strings.Contains(err.Error(), "GetPluginInfoResponse") {
		t.Fatalf("AddRule: %v", err)
	}
}

func TestActionsOnStreamsAndUnknownMethods(t *testing.T) {
	rules := []Rule{
		{Method: "GetMetadataAllocated", Action: Action{Kind: ActionOK}},
		{Method: "GetMetadataDelta", Action: Action{Kind: ActionError, Code: codes.PermissionDenied}},
		{Method: "/example.v1.Nothing/Ping", Action: Action{Kind: ActionOK}},
		{Method: "/example.v1.Nothing/Pong", Action: Action{Kind: ActionDelay, Delay: 50 * time.Millisecond}},
	}
	e := newEnv(t, Config{Rules: rules}, mock.Config{})
	ctx := ctxT(t)
	sm := csi.NewSnapshotMetadataClient(e.conn)

	// An ok answer to a stream is a stream without messages.
	alloc, err := sm.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alloc.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("ok stream: got %v, want the end of the stream", err)
	}
	delta, err := sm.GetMetadataDelta(ctx, &csi.GetMetadataDeltaRequest{BaseSnapshotId: "a", TargetSnapshotId: "b"})
	if err == nil {
		_, err = delta.Recv()
	}
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("error on a stream: got %v", err)
	}
	// An ok answer to an unknown (presumably unary) method is one empty
	// message.
	if err := e.conn.Invoke(ctx, "/example.v1.Nothing/Ping", &emptypb.Empty{}, &emptypb.Empty{}); err != nil {
		t.Fatalf("ok on an unknown method: %v", err)
	}
	start := time.Now()
	if err := e.conn.Invoke(ctx, "/example.v1.Nothing/Pong", &emptypb.Empty{}, &emptypb.Empty{}); status.Code(err) != codes.Unimplemented || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("delayed unknown method: %v after %s, want the driver's Unimplemented after 50ms", err, time.Since(start))
	}
	var got []string
	for _, c := range e.calls() {
		got = append(got, fmt.Sprintf("%s:%s:%t", c.Method, c.Code, c.Forwarded))
	}
	if want := "GetMetadataAllocated:OK:false GetMetadataDelta:PermissionDenied:false Ping:OK:false Pong:Unimplemented:true"; strings.Join(got, " ") != want {
		t.Fatalf("calls %s, want %s", strings.Join(got, " "), want)
	}
}

// snapshotMetadata streams a fixed number of answers, to test forwarding
// of streams, which the mock driver does not serve.
type snapshotMetadata struct {
	csi.UnimplementedSnapshotMetadataServer
	n int
}

func (s snapshotMetadata) GetMetadataAllocated(req *csi.GetMetadataAllocatedRequest, stream csi.SnapshotMetadata_GetMetadataAllocatedServer) error {
	for i := range s.n {
		if err := stream.Send(&csi.GetMetadataAllocatedResponse{VolumeCapacityBytes: int64(i), BlockMetadataType: csi.BlockMetadataType_FIXED_LENGTH}); err != nil {
			return err
		}
	}
	return nil
}

func TestStreamsAreForwarded(t *testing.T) {
	dir := socketDir(t)
	srv := grpc.NewServer()
	csi.RegisterSnapshotMetadataServer(srv, snapshotMetadata{n: 3})
	lis, err := net.Listen("unix", filepath.Join(dir, "driver.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	finished := make(chan Call, 1)
	p, err := Start(context.Background(), Config{Listen: filepath.Join(dir, "proxy.sock"), Target: filepath.Join(dir, "driver.sock"),
		OnCall: func(c Call) { finished <- c }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	stream, err := csi.NewSnapshotMetadataClient(dial(t, p.Endpoint())).GetMetadataAllocated(ctxT(t), &csi.GetMetadataAllocatedRequest{SnapshotId: "s"})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.GetVolumeCapacityBytes())
	}
	if fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("got messages %v, want [0 1 2]", got)
	}
	// The proxy finishes the call a moment after the caller saw its end.
	select {
	case c := <-finished:
		if c.Method != "GetMetadataAllocated" || c.Code != codes.OK || !c.Forwarded {
			t.Fatalf("call: %s (forwarded %t)", c, c.Forwarded)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the proxy never finished the call")
	}
}

// A crash rule forwards the call, lets the driver answer, then has the
// proxy's owner kill (and restart) the driver: the caller hears
// Unavailable, the driver did the work, and the next call is answered.
func TestCrashAfterTheDriverAnswered(t *testing.T) {
	rec := trace.New(clock.RealClock{})
	crashes := 0
	e := newEnv(t, Config{Name: "ctrl-proxy", Recorder: rec, Crash: func() error { crashes++; return nil },
		Rules: []Rule{{ID: "die", Method: "CreateVolume", Times: 1, Action: Action{Kind: ActionCrash, AfterForward: true}}}}, mock.Config{})
	ctx := ctxT(t)
	req := &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo}}
	_, err := e.ctrl.CreateVolume(ctx, req)
	if st := status.Convert(err); st.Code() != codes.Unavailable || st.Message() != "error reading from server: EOF" {
		t.Fatalf("first CreateVolume: %v; want Unavailable, the connection lost", err)
	}
	if crashes != 1 {
		t.Fatalf("Crash called %d times, want 1", crashes)
	}
	if _, ok := e.backend.Volume("mock-pvc-1"); !ok {
		t.Fatal("the driver did not make the volume before it crashed")
	}
	resp, err := e.ctrl.CreateVolume(ctx, req)
	if err != nil || resp.GetVolume().GetVolumeId() != "mock-pvc-1" {
		t.Fatalf("retry: %v, %v; want the same volume", resp, err)
	}
	var lost, crashed int
	for _, f := range rec.Filter(trace.Fault) {
		switch {
		case f.Verb == "CreateVolume" && f.Call != nil && f.Call.Volume == "mock-pvc-1" && f.Call.Code == codes.OK:
			lost++
		case f.Verb == "driver-crashed" && strings.Contains(f.Detail, "after it answered CreateVolume (rule die)"):
			crashed++
		}
	}
	if lost != 1 || crashed != 1 {
		t.Errorf("timeline: %d answers lost, %d crashes; want one of each: %v", lost, crashed, rec.Filter(trace.Fault))
	}
}

func TestCrashRuleNeedsAnOwnerThatCanCrash(t *testing.T) {
	e := newEnv(t, Config{}, mock.Config{})
	if _, err := e.proxy.AddRule(Rule{Method: "CreateVolume", Action: Action{Kind: ActionCrash, AfterForward: true}}); err == nil ||
		!strings.Contains(err.Error(), "cannot kill the driver behind it") {
		t.Errorf("crash rule on a proxy without Crash: %v", err)
	}
	e = newEnv(t, Config{Crash: func() error { return nil }}, mock.Config{})
	if _, err := e.proxy.AddRule(Rule{Method: "CreateVolume", Action: Action{Kind: ActionCrash}}); err == nil ||
		!strings.Contains(err.Error(), "comes after forwarding") {
		t.Errorf("crash rule before forwarding: %v", err)
	}
}
