package realcluster

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/drivers/faultproxy"
	"github.com/csisim/csisim/trace"
)

// TestCallEntryStructuredData: a proxied sidecar call's entry carries the
// call's data, and says which entries came before the call was sent.
func TestCallEntryStructuredData(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := trace.New(clk)
	rec.Add(trace.Entry{Kind: trace.API, Verb: "create", Object: "VolumeAttachment va"})
	clk.Step(time.Second)
	rec.Add(trace.Entry{Kind: trace.API, Verb: "update", Object: "Node node-1"})
	clk.Step(time.Second)
	// Sent after the first entry, answered two seconds later: the second
	// entry came while it was under way.
	call := faultproxy.Call{Method: "ControllerPublishVolume", VolumeID: "v1", NodeID: "node-1", Code: codes.OK,
		AccessMode: "SINGLE_NODE_WRITER", Duration: 1500 * time.Millisecond}
	e := callEntry("csi-attacher", call, rec)
	c := e.Call
	if c == nil || c.Volume != "v1" || c.NodeID != "node-1" || c.AccessMode != "SINGLE_NODE_WRITER" || c.Code != codes.OK {
		t.Fatalf("entry data: %+v", c)
	}
	if c.StartedAfter != 1 || c.Started != 500*time.Millisecond {
		t.Errorf("started after %d entries at %s; want 1, 500ms", c.StartedAfter, c.Started)
	}
}
