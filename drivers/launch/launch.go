// Package launch starts CSI driver binaries as separate processes from a
// command template, waits until they answer on their socket and stops them
// again. Any CSI driver can be described by a template: csisim's own
// (OurDriver) or a third-party one such as csi-driver-host-path.
package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/csisim/csisim/drivers/endpoint"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
)

// Template describes how to run a driver. Path, Args and Env may contain
// the placeholders {endpoint}, {nodeID}, {stateDir}, {root}, {zone},
// {driverName} and {csisim}, anywhere in a string (e.g.
// "--endpoint={endpoint}"); Start replaces them from Vars.
type Template struct {
	// Path is the executable.
	Path string
	// Args are the arguments after the executable name.
	Args []string
	// Env is added to the simulator's own environment, as KEY=value.
	Env []string
}

// Vars are the values substituted into a Template.
type Vars struct {
	// Endpoint is the CSI endpoint, e.g. unix:///run/x/csi.sock; a bare
	// absolute path is taken as a unix socket.
	Endpoint string
	NodeID   string
	StateDir string
	Root     string
	// Zone is the zone of the plugin's node; empty for a node without one
	// (a template that uses {zone} there is an error).
	Zone string
	// DriverName is the name the driver is to report, for drivers that
	// take it as a flag (csisim's own).
	DriverName string
	// CSISim is the csisim binary, for a template that runs `csisim driver`.
	CSISim string
}

// Placeholders are the placeholders a Template may use, in the order
// messages list them. (A driver profile's {built} is filled in before a
// template is made from it: package sim/clusterprofile.)
var Placeholders = []string{"{endpoint}", "{nodeID}", "{stateDir}", "{root}", "{zone}", "{driverName}", "{csisim}"}

// OurDriver returns the template for csisim's own driver, run as
// `<binary> driver ...`. The controller does not take a node ID, so in
// "controller" mode the template leaves --node-id out; an empty driverName
// leaves the driver's default.
func OurDriver(binary, mode, driverName string) Template {
	args := []string{"driver", "--endpoint", "{endpoint}"}
	if mode != "controller" {
		args = append(args, "--node-id", "{nodeID}")
	}
	args = append(args, "--root", "{root}", "--state-dir", "{stateDir}", "--mode", mode)
	if driverName != "" {
		args = append(args, "--driver-name", driverName)
	}
	return Template{Path: binary, Args: args}
}

var placeholder = regexp.MustCompile(`\{[A-Za-z_][A-Za-z0-9_]*\}`)

// Expand returns the template with every placeholder replaced. A placeholder
// it does not know, or one whose value is empty, is an error: either would
// otherwise reach the driver as a confusing flag value.
func (t Template) Expand(v Vars) (Template, error) {
	values := map[string]string{
		"{endpoint}":   v.Endpoint,
		"{nodeID}":     v.NodeID,
		"{stateDir}":   v.StateDir,
		"{root}":       v.Root,
		"{zone}":       v.Zone,
		"{driverName}": v.DriverName,
		"{csisim}":     v.CSISim,
	}
	var errs []error
	expand := func(what, s string) string {
		return placeholder.ReplaceAllStringFunc(s, func(p string) string {
			val, known := values[p]
			switch {
			case !known:
				errs = append(errs, fmt.Errorf("%s %q: unknown placeholder %s (known: %s)", what, s, p, strings.Join(Placeholders, " ")))
			case val == "":
				errs = append(errs, fmt.Errorf("%s %q: placeholder %s has no value", what, s, p))
			}
			return val
		})
	}
	out := Template{Path: expand("path", t.Path)}
	for i, a := range t.Args {
		out.Args = append(out.Args, expand(fmt.Sprintf("argument %d", i+1), a))
	}
	for _, e := range t.Env {
		out.Env = append(out.Env, expand("environment entry", e))
	}
	if out.Path == "" && len(errs) == 0 {
		errs = append(errs, errors.New("template has no executable path"))
	}
	if err := errors.Join(errs...); err != nil {
		return Template{}, fmt.Errorf("expand driver template: %w", err)
	}
	return out, nil
}

// Process is a running driver.
type Process struct {
	name     string
	endpoint string
	cmd      *exec.Cmd
	out      *outputLog

	exited  chan struct{}
	waitErr error // set before exited is closed

	// intended is set before the launcher itself signals the driver
	// (Stop, Kill, the end of Start's context): an exit after that is
	// asked for, any other is unexpected.
	intended atomic.Bool
	mu       sync.Mutex
	onExit   []func(Exit)
	exit     *Exit // set once reaped
}

// Exit is how a driver process ended.
type Exit struct {
	// Name is the name the driver was started under.
	Name string
	// PID is its process ID.
	PID int
	// Intended is true when the launcher had been told to stop or kill
	// it (Stop, Kill, the end of Start's context) before it exited.
	Intended bool
	// Code is the exit status, -1 when a signal ended it.
	Code int
	// Signal is the signal that ended it, 0 when it exited by itself.
	Signal syscall.Signal
}

// Status says how the process ended: "exited with status 3", "was killed
// by signal 9 (killed)".
func (e Exit) Status() string {
	if e.Signal != 0 {
		return fmt.Sprintf("was killed by signal %d (%s)", int(e.Signal), e.Signal)
	}
	return fmt.Sprintf("exited with status %d", e.Code)
}

// Timing defaults.
const (
	// ctxStopGrace is how long a driver whose Start context ended gets
	// between SIGTERM and SIGKILL.
	ctxStopGrace = 5 * time.Second
	// outputWaitDelay bounds how long reaping waits for the driver's
	// output pipe after it exited, in case a child of it still holds it.
	outputWaitDelay = 2 * time.Second
	// killWait bounds the wait for a SIGKILLed process to be reaped (a
	// process stuck in the kernel, e.g. in a hung mount, may never go).
	killWait = 10 * time.Second
	// tailLines is how many lines of output an error quotes.
	tailLines = 20
)

// Start runs the driver described by t with v substituted. Its output goes
// line by line to log, prefixed with "[name] ". The process runs until Stop
// or Kill, or until ctx is done, which stops it as Stop does with a grace
// period of a few seconds.
//
// The driver runs in its own process group, so that signals from the
// terminal do not reach it directly and Stop can kill any helpers it forked,
// and with SIGKILL as parent-death signal, so that it never outlives the
// simulator, even if the simulator dies without cleaning up.
func Start(ctx context.Context, name string, t Template, v Vars, log io.Writer) (*Process, error) {
	x, err := t.Expand(v)
	if err != nil {
		return nil, fmt.Errorf("start driver %s: %w", name, err)
	}
	if log == nil {
		log = io.Discard
	}
	out := &outputLog{prefix: "[" + name + "] ", dst: log}
	cmd := exec.Command(x.Path, x.Args...)
	cmd.Env = append(os.Environ(), x.Env...)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = outputWaitDelay
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	p := &Process{name: name, endpoint: v.Endpoint, cmd: cmd, out: out, exited: make(chan struct{})}

	// The kernel sends the parent-death signal when the *thread* that
	// forked the child exits, not the process. The Go runtime ends a
	// thread when a goroutine locked to it returns, so a caller that had
	// locked its thread would take the driver down with it. Forking from
	// a goroutine of our own that stays locked to its thread until the
	// child is reaped keeps that thread alive exactly as long as the
	// driver; only the death of the whole simulator ends it early, which
	// is when the signal is meant to fire.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		out.flush()
		p.reaped()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start driver %s: %w", name, err)
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = p.Stop(ctxStopGrace)
		case <-p.exited:
		}
	}()
	return p, nil
}

// reaped records how the process ended and tells those waiting for it.
func (p *Process) reaped() {
	e := Exit{Name: p.name, PID: p.PID(), Intended: p.intended.Load(), Code: -1}
	if ps := p.cmd.ProcessState; ps != nil {
		e.Code = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal()
		}
	}
	p.mu.Lock()
	p.exit = &e
	fns := p.onExit
	p.onExit = nil
	p.mu.Unlock()
	for _, f := range fns {
		f(e)
	}
}

// OnExit has f called once with how the driver ended, as soon as it is
// reaped (from another goroutine), or at once if it has been already.
func (p *Process) OnExit(f func(Exit)) {
	p.mu.Lock()
	e := p.exit
	if e == nil {
		p.onExit = append(p.onExit, f)
	}
	p.mu.Unlock()
	if e != nil {
		f(*e)
	}
}

// PID is the driver's process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the driver has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Wait blocks until the driver has exited and returns how it ended, as
// exec.Cmd.Wait does.
func (p *Process) Wait() error {
	<-p.exited
	return p.waitErr
}

// probeInterval is the pause between readiness probes.
const probeInterval = 50 * time.Millisecond

// WaitReady calls Identity.Probe on the driver's endpoint until it reports
// ready, ctx is done, or the driver exits. The errors for the last two quote
// the driver's most recent output.
func (p *Process) WaitReady(ctx context.Context) error {
	target, err := endpoint.DialTarget(p.endpoint)
	if err != nil {
		return fmt.Errorf("driver %s: %w", p.name, err)
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// The socket appears some time after the process starts; retry
		// at the probe's pace rather than grpc's default backoff.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
			BaseDelay: probeInterval, Multiplier: 1, MaxDelay: probeInterval,
		}}))
	if err != nil {
		return fmt.Errorf("driver %s: dial %s: %w", p.name, target, err)
	}
	defer conn.Close()
	identity := csi.NewIdentityClient(conn)

	var lastProbe error // set by every probe that did not say ready
	for {
		select {
		case <-p.exited:
			return p.exitError("exited before becoming ready")
		default:
		}
		probeCtx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := identity.Probe(probeCtx, &csi.ProbeRequest{})
		cancel()
		switch {
		case err != nil:
			lastProbe = err
		// An unset ready field means ready: the plugin has nothing to
		// wait for.
		case resp.GetReady() == nil || resp.GetReady().GetValue():
			return nil
		default:
			lastProbe = errors.New("probe answered ready=false")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("driver %s (pid %d) not ready on %s: %w (last probe: %v)%s",
				p.name, p.PID(), p.endpoint, ctx.Err(), lastProbe, p.out.quote())
		case <-p.exited:
			return p.exitError("exited before becoming ready")
		case <-time.After(probeInterval):
		}
	}
}

func (p *Process) exitError(what string) error {
	state := "unknown exit status"
	if ps := p.cmd.ProcessState; ps != nil {
		state = ps.String()
	} else if p.waitErr != nil {
		state = p.waitErr.Error()
	}
	return fmt.Errorf("driver %s (pid %d) %s: %s%s", p.name, p.PID(), what, state, p.out.quote())
}

// Stop asks the driver to exit with SIGTERM and, if it is still running
// after grace, kills its whole process group with SIGKILL. It returns once
// the driver is reaped; stopping an exited driver does nothing. The exit
// counts as intended.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	p.intended.Store(true)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop driver %s: %w", p.name, err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return p.endGroup()
	case <-timer.C:
	}
	p.out.note(fmt.Sprintf("still running %s after SIGTERM; sending SIGKILL", grace))
	return p.Kill()
}

// Kill kills the driver's process group with SIGKILL and waits until the
// driver is reaped. The exit counts as intended (a fault that kills the
// driver on purpose uses Kill).
func (p *Process) Kill() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	p.intended.Store(true)
	// The group ID is the driver's PID. It could only name a stranger if
	// the driver were reaped, and its PID reused by a new group leader, in
	// the instant since the check above; helpers the driver forked die
	// with it.
	if err := unix.Kill(-p.PID(), unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill driver %s: %w", p.name, err)
	}
	select {
	case <-p.exited:
		return p.endGroup()
	case <-time.After(killWait):
		return fmt.Errorf("kill driver %s (pid %d): not reaped %s after SIGKILL", p.name, p.PID(), killWait)
	}
}

// endGroup, once the driver is reaped, kills what is left of its process
// group — a mount or mkfs it had forked, say, which outlives it by a few
// milliseconds after a SIGKILL or goes on after the driver left on
// SIGTERM — and waits until the group is empty, as a container runtime
// ends every process of a stopped container: a run that is over leaves
// no process of its driver behind, not even one about to die. (The
// group keeps its ID while it has members, so the ID names no stranger.)
func (p *Process) endGroup() error {
	deadline := time.Now().Add(killWait)
	for {
		err := unix.Kill(-p.PID(), unix.SIGKILL)
		if errors.Is(err, unix.ESRCH) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("kill what driver %s left (process group %d): %w", p.name, p.PID(), err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("driver %s: its process group %d still has processes %s after SIGKILL", p.name, p.PID(), killWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// outputLog forwards a driver's output line by line with a prefix and keeps
// the last lines for error messages.
type outputLog struct {
	prefix string
	dst    io.Writer

	mu      sync.Mutex
	partial []byte
	tail    []string
}

func (o *outputLog) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, b...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		o.line(string(o.partial[:i]))
		o.partial = o.partial[i+1:]
	}
	return len(b), nil
}

// flush emits an unterminated last line.
func (o *outputLog) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.partial) > 0 {
		o.line(string(o.partial))
		o.partial = nil
	}
}

// note logs a line of the launcher's own, not kept for error messages.
func (o *outputLog) note(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.dst, "%s%s\n", o.prefix, s)
}

// line handles one complete line; the caller holds mu.
func (o *outputLog) line(s string) {
	fmt.Fprintf(o.dst, "%s%s\n", o.prefix, s)
	o.tail = append(o.tail, s)
	if len(o.tail) > tailLines {
		o.tail = o.tail[len(o.tail)-tailLines:]
	}
}

// quote renders the kept lines for an error message.
func (o *outputLog) quote() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	lines := o.tail
	if len(o.partial) > 0 {
		lines = append(lines[:len(lines):len(lines)], string(o.partial))
	}
	if len(lines) == 0 {
		return "; no output"
	}
	return "; last output:\n\t" + strings.Join(lines, "\n\t")
}
