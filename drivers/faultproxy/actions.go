// Carrying out the action of the rule that fires on a call: fail, answer,
// lose the answer, crash the driver, drop the connection.

package faultproxy

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/csisim/csisim/trace"
)

// execute carries out the action on a call, forwarding it through forward
// when the action asks for that; nil act forwards untouched.
func (p *Proxy) execute(ctx context.Context, c *Call, info *methodInfo, act *Action, forward func() ([]byte, error)) ([]byte, error) {
	if act == nil {
		return forward()
	}
	var resp []byte
	var err error
	if act.AfterForward {
		resp, err = forward()
		if act.Kind != ActionDelay {
			p.noteLostAnswer(c, info, resp, err)
		}
	}
	if act.Kind == ActionCrash {
		return nil, p.crash(c)
	}
	switch act.Kind {
	case ActionError:
		msg := act.Message
		if msg == "" {
			msg = fmt.Sprintf("injected by faultproxy rule %s", c.Rule)
		}
		return nil, status.Error(act.Code, msg)
	case ActionDelay:
		if werr := p.wait(ctx, act.Delay, c.Rule); werr != nil {
			return nil, werr
		}
		if act.AfterForward {
			return resp, err
		}
		return forward()
	case ActionHang:
		return nil, p.hang(ctx, act.Delay, c.Rule)
	case ActionDrop:
		p.drop(ctx)
		return nil, status.Errorf(codes.Unavailable, "connection dropped by faultproxy rule %s", c.Rule)
	case ActionOK:
		return okResponse(info, act.Response, c.Rule)
	}
	return nil, status.Errorf(codes.Internal, "faultproxy rule %s: unknown action %v", c.Rule, act.Kind)
}

// crash kills the driver behind the proxy (Config.Crash, which starts it
// again) after it has answered c, and returns what the caller of a driver
// that died mid-call gets.
func (p *Proxy) crash(c *Call) error {
	err := p.cfg.Crash()
	if rec := p.cfg.Recorder; rec != nil {
		rec.Add(trace.Entry{Kind: trace.Fault, Actor: p.cfg.Name, Verb: "driver-crashed", Object: "the driver behind it",
			Detail: "killed after it answered " + c.Method + " (rule " + c.Rule + "), then started again", Err: errText(err)})
	}
	// What grpc-go's client says when the server's side of the
	// connection goes.
	return status.Error(codes.Unavailable, "error reading from server: EOF")
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// noteLostAnswer records in the timeline what the driver answered to a call
// whose answer the rule keeps from the caller: the caller's own record
// shows only the error it got, so this is the one record of the work the
// driver did (a volume made or deleted), which the invariants read.
func (p *Proxy) noteLostAnswer(c *Call, info *methodInfo, resp []byte, err error) {
	if p.cfg.Recorder == nil {
		return
	}
	answer := *c
	answer.Capabilities = nil
	if err != nil {
		st := status.Convert(err)
		answer.Code, answer.Message = st.Code(), st.Message()
	} else {
		describeResponse(&answer, info, resp)
	}
	object := answer.VolumeID
	if answer.Name != "" {
		object = answer.Name
		if answer.VolumeID != "" {
			object += " -> " + answer.VolumeID
		}
	}
	p.cfg.Recorder.Add(trace.Entry{Kind: trace.Fault, Actor: p.cfg.Name, Verb: c.Method, Object: object,
		Detail: "answer lost: the driver answered " + answer.Code.String() + " to rule " + c.Rule, Call: answer.Trace()})
}

// drop closes the connection the call came on. grpc knows the connection
// only by its peer address, which the tracking listener makes unique.
func (p *Proxy) drop(ctx context.Context) {
	pr, ok := peer.FromContext(ctx)
	if !ok {
		return
	}
	if a, ok := pr.Addr.(*connAddr); ok {
		p.lis.closeConn(a.id)
	}
}

// okResponse is the answer of an ok action: the configured response, or
// nil for an empty one.
func okResponse(info *methodInfo, resp proto.Message, rule string) ([]byte, error) {
	if resp == nil {
		return nil, nil
	}
	if info != nil {
		if got, want := resp.ProtoReflect().Descriptor().FullName(), info.resp.Descriptor().FullName(); got != want {
			return nil, status.Errorf(codes.Internal, "faultproxy rule %s: configured response is a %s, %s answers a %s", rule, got, info.name, want)
		}
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "faultproxy rule %s: encode response: %v", rule, err)
	}
	return b, nil
}

// pick finds the rule that fires on the call, if any, and notes it in the
// call and the timeline.
func (p *Proxy) pick(c *Call) *Action {
	p.rulesMu.Lock()
	var chosen *ruleState
	for _, s := range p.rules {
		if s.consider(c) && chosen == nil {
			chosen = s
		}
	}
	if chosen == nil {
		p.rulesMu.Unlock()
		return nil
	}
	chosen.fired++
	r := chosen.rule
	p.rulesMu.Unlock()

	c.Rule, c.Action = r.ID, r.Action.Kind
	if rec := p.cfg.Recorder; rec != nil {
		object := c.VolumeID
		if object == "" {
			object = c.Name
		}
		rec.Add(trace.Entry{Kind: trace.Fault, Actor: p.cfg.Name, Verb: c.Method, Object: object, Detail: "rule " + r.String()})
	}
	return &r.Action
}
