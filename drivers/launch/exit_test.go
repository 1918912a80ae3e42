package launch

import (
	"context"
	"testing"
	"time"
)

// How a driver ended, and whether the launcher had asked for it: only an
// exit nobody asked for is unexpected.
func TestExitSaysHowAndWhetherIntended(t *testing.T) {
	r := newRoot(t)
	tests := []struct {
		name         string
		script       string
		end          func(p *Process) error
		wantIntended bool
		wantStatus   string
	}{
		{name: "exits by itself", script: "exit 3", wantStatus: "exited with status 3"},
		{name: "killed by a stranger", script: "kill -9 $$", wantStatus: "was killed by signal 9 (killed)"},
		{name: "killed on purpose", script: "sleep 30", end: (*Process).Kill, wantIntended: true, wantStatus: "was killed by signal 9 (killed)"},
		{name: "stopped", script: "sleep 30", end: func(p *Process) error { return p.Stop(5 * time.Second) },
			wantIntended: true, wantStatus: "was killed by signal 15 (terminated)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(context.Background(), "driver "+tt.name, Template{Path: "/bin/sh", Args: []string{"-c", tt.script}}, varsIn(r, "n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan Exit, 1)
			p.OnExit(func(e Exit) { got <- e })
			if tt.end != nil {
				if err := tt.end(p); err != nil {
					t.Fatal(err)
				}
			}
			var e Exit
			select {
			case e = <-got:
			case <-time.After(10 * time.Second):
				_ = p.Kill()
				t.Fatal("OnExit was not called")
			}
			if e.Intended != tt.wantIntended || e.Status() != tt.wantStatus || e.Name != "driver "+tt.name || e.PID != p.PID() {
				t.Errorf("exit = %+v (%s), want intended %v, %q", e, e.Status(), tt.wantIntended, tt.wantStatus)
			}
			// Asked after the fact, it answers at once with the same.
			again := make(chan Exit, 1)
			p.OnExit(func(e Exit) { again <- e })
			if a := <-again; a != e {
				t.Errorf("OnExit after the exit = %+v, want %+v", a, e)
			}
		})
	}
}
