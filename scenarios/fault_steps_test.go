package scenarios

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/fault"
)

func TestParseFaultSteps(t *testing.T) {
	tests := []struct {
		step string
		want fault.Fault
		name string
	}{
		{"nodeLoss: {node: node-a}", fault.Fault{Kind: fault.NodeLoss, Node: "node-a"}, "node-loss on node-a"},
		{"nodePluginMissing: {node: node-b}", fault.Fault{Kind: fault.NodePluginMissing, Node: "node-b"}, "node-plugin-missing on node-b"},
		{"staleVolumeAttachment: {node: node-a, claim: data}",
			fault.Fault{Kind: fault.StaleVolumeAttachment, Node: "node-a", Claim: "data"}, "stale-volumeattachment data on node-a"},
		{"staleVolumeAttachment: {node: node-b, claim: logs, namespace: team-a}",
			fault.Fault{Kind: fault.StaleVolumeAttachment, Node: "node-b", Claim: "logs", Namespace: "team-a"}, "stale-volumeattachment logs on node-b"},
		{"controllerManagerRestart: {}", fault.Fault{Kind: fault.ControllerManagerRestart}, "controller-manager-restart"},
		{"controllerManagerRestart:", fault.Fault{Kind: fault.ControllerManagerRestart}, "controller-manager-restart"},
		{"csiError: {method: NodeStageVolume, code: Unavailable, times: 1}",
			fault.Fault{Kind: fault.CSIError, Times: 1, CSI: fault.CSI{Method: "NodeStageVolume", Code: codes.Unavailable}},
			"csi-error NodeStageVolume Unavailable"},
		{"csiError: {method: 'Controller*', code: RESOURCE_EXHAUSTED, message: full, times: always, node: node-a, volume: vol-1, plugin: controller}",
			fault.Fault{Kind: fault.CSIError, Node: "node-a", Plugin: fault.Controller,
				CSI: fault.CSI{Method: "Controller*", Volume: "vol-1", Code: codes.ResourceExhausted, Message: "full"}},
			"csi-error Controller* volume vol-1 ResourceExhausted on node-a"},
		{"csiError: {method: CreateVolume, code: 8}",
			fault.Fault{Kind: fault.CSIError, CSI: fault.CSI{Method: "CreateVolume", Code: codes.ResourceExhausted}}, "csi-error CreateVolume ResourceExhausted"},
		{"csiDelay: {method: NodePublishVolume, duration: 3s, times: 2, plugin: node}",
			fault.Fault{Kind: fault.CSIDelay, Plugin: fault.Node, Times: 2, CSI: fault.CSI{Method: "NodePublishVolume", Delay: 3 * time.Second}},
			"csi-delay NodePublishVolume 3s"},
		{"csiHang: {method: ControllerPublishVolume}",
			fault.Fault{Kind: fault.CSIHang, CSI: fault.CSI{Method: "ControllerPublishVolume"}}, "csi-hang ControllerPublishVolume"},
		{"csiHang: {method: ControllerPublishVolume, limit: 10m, times: 1}",
			fault.Fault{Kind: fault.CSIHang, Times: 1, CSI: fault.CSI{Method: "ControllerPublishVolume", Delay: 10 * time.Minute}}, "csi-hang ControllerPublishVolume"},
		{"csiLostAnswer: {method: CreateVolume, times: 2}",
			fault.Fault{Kind: fault.CSILostAnswer, Times: 2, CSI: fault.CSI{Method: "CreateVolume"}}, "csi-lost-answer CreateVolume"},
		{"csiLostAnswer: {method: NodeStageVolume, times: 100, firstAttempt: true, node: node-b, plugin: node}",
			fault.Fault{Kind: fault.CSILostAnswer, Times: 100, Node: "node-b", Plugin: fault.Node, CSI: fault.CSI{Method: "NodeStageVolume", FirstAttempt: true}},
			"csi-lost-answer NodeStageVolume first attempt per volume on node-b"},
		{"driverCrashMidCall: {method: CreateVolume, times: 1}",
			fault.Fault{Kind: fault.DriverCrashMidCall, Times: 1, CSI: fault.CSI{Method: "CreateVolume"}}, "driver-crash-mid-call CreateVolume"},
		{"driverCrashMidCall: {method: NodePublishVolume, times: 20, firstAttempt: true, node: node-b, plugin: node}",
			fault.Fault{Kind: fault.DriverCrashMidCall, Times: 20, Node: "node-b", Plugin: fault.Node, CSI: fault.CSI{Method: "NodePublishVolume", FirstAttempt: true}},
			"driver-crash-mid-call NodePublishVolume first attempt per volume on node-b"},
		{"sidecarRestart: {component: external-provisioner}",
			fault.Fault{Kind: fault.SidecarRestart, Component: "external-provisioner"}, "sidecar-restart external-provisioner"},
		{"csiHeal: {}", fault.Fault{Kind: fault.CSIHeal}, "csi-heal"},
		{"apiServerDown: {duration: 30s}", fault.Fault{Kind: fault.APIServerDown, API: fault.API{Duration: 30 * time.Second}}, "api-server-down for 30s"},
		{"apiSlowWrites: {latency: 2s, duration: 1m, component: external-provisioner}",
			fault.Fault{Kind: fault.APISlowWrites, Component: "external-provisioner", API: fault.API{Duration: time.Minute, Latency: 2 * time.Second}},
			"api-slow-writes +2s per write of external-provisioner for 1m0s"},
		{"apiThrottle: {times: 5}", fault.Fault{Kind: fault.APIThrottle, Times: 5, API: fault.API{RetryAfter: time.Second}},
			"api-throttle 429 Retry-After 1s next 5 requests"},
		{"apiThrottle: {duration: 20s, retryAfter: 3s, component: 'kubelet:node-a'}",
			fault.Fault{Kind: fault.APIThrottle, Component: "kubelet:node-a", API: fault.API{Duration: 20 * time.Second, RetryAfter: 3 * time.Second}},
			"api-throttle 429 Retry-After 3s of kubelet:node-a for 20s"},
		{"csiHeal: {method: NodeStageVolume, node: node-b}",
			fault.Fault{Kind: fault.CSIHeal, Node: "node-b", CSI: fault.CSI{Method: "NodeStageVolume"}}, "csi-heal NodeStageVolume on node-b"},
		{"driverCrash: {plugin: controller}", fault.Fault{Kind: fault.DriverCrash, Plugin: fault.Controller}, "driver-crash controller"},
		{"driverCrash: {plugin: node, node: node-a}", fault.Fault{Kind: fault.DriverCrash, Plugin: fault.Node, Node: "node-a"}, "driver-crash node on node-a"},
		{"driverRestart: {plugin: controller, state: lose}",
			fault.Fault{Kind: fault.DriverRestart, Plugin: fault.Controller, LoseState: true}, "driver-restart controller without state"},
		{"driverRestart: {plugin: node, node: node-b, state: keep}",
			fault.Fault{Kind: fault.DriverRestart, Plugin: fault.Node, Node: "node-b"}, "driver-restart node on node-b"},
		{"apiConflict: {component: external-provisioner, times: 5}",
			fault.Fault{Kind: fault.APIConflict, Component: "external-provisioner", Times: 5}, "api-conflict external-provisioner"},
		{"apiConflict: {component: 'kubelet:node-a', times: 1}",
			fault.Fault{Kind: fault.APIConflict, Component: "kubelet:node-a", Times: 1}, "api-conflict kubelet:node-a"},
		{"watchDrop: {component: attachdetach-controller, kind: pods, times: 2}",
			fault.Fault{Kind: fault.WatchDrop, Component: "attachdetach-controller", Resource: "pods", Times: 2}, "watch-drop attachdetach-controller pods"},
		{"watchDrop: {component: attachdetach-controller, kind: pvc, times: 1}",
			fault.Fault{Kind: fault.WatchDrop, Component: "attachdetach-controller", Resource: "persistentvolumeclaims", Times: 1},
			"watch-drop attachdetach-controller persistentvolumeclaims"},
		{"watchDrop: {component: external-attacher, kind: VolumeAttachment, times: 1}",
			fault.Fault{Kind: fault.WatchDrop, Component: "external-attacher", Resource: "volumeattachments", Times: 1},
			"watch-drop external-attacher volumeattachments"},
		{"watchDrop: {component: external-attacher, kind: volumeattachments.storage.k8s.io, times: 1}",
			fault.Fault{Kind: fault.WatchDrop, Component: "external-attacher", Resource: "volumeattachments", Times: 1},
			"watch-drop external-attacher volumeattachments"},
	}
	for _, tt := range tests {
		t.Run(tt.step, func(t *testing.T) {
			s, err := parseWithFiles(t, "cluster: {nodes: [node-a, node-b]}\nsteps:\n  - "+tt.step+"\n", nil)
			if err != nil {
				t.Fatal(err)
			}
			st := s.Steps[0]
			if st.Fault == nil || *st.Fault != tt.want {
				t.Errorf("fault %+v, want %+v", st.Fault, tt.want)
			}
			if st.Name != tt.name {
				t.Errorf("name %q, want %q", st.Name, tt.name)
			}
			if st.Action() != FaultStepKey(tt.want.Kind) {
				t.Errorf("action %q, want %q", st.Action(), tt.want.Kind)
			}
		})
	}
}

func TestParseFaultStepErrors(t *testing.T) {
	// Each source is the step at line 3, after a cluster of two nodes.
	tests := []struct{ step, want string }{
		{"nodeLoss: {}", "nodeLoss needs node: (the node's name)"},
		{"nodePluginMissing: {node: node-c}", `there is no node "node-c" in cluster.nodes (node-a, node-b)`},
		{"staleVolumeAttachment: {node: node-a}", "staleVolumeAttachment needs node: (the node's name) and claim: (the claim whose volume it attaches)"},
		{"staleVolumeAttachment: {node: node-a, claim: data, clam: data}", `unknown field "clam" (did you mean "claim"?)`},
		{"staleVolumeAttachment: {node: '', claim: data}", "node is empty"},
		{"controllerManagerRestart: {node: node-a}", "controllerManagerRestart takes no fields; write controllerManagerRestart: {}"},

		{"csiError: {code: Unavailable}", "csiError needs method:"},
		{"csiError: {method: NodeStageVolume}", "csiError needs code:"},
		{"csiError: {}", "csiError needs method: and code:"},
		{"csiError: {method: NodeStageVolum, code: Unavailable}", `method "NodeStageVolum" is not a CSI method (did you mean "NodeStageVolume"?)`},
		{"csiError: {method: 'Node[', code: Unavailable}", `method pattern "Node["`},
		{"csiError: {method: NodeStageVolume, code: Unavailabel}", `unknown gRPC code "Unavailabel"; write a gRPC code such as Unavailable`},
		{"csiError: {method: NodeStageVolume, code: 99}", "no gRPC code 99"},
		{"csiError: {method: NodeStageVolume, code: OK}", "code OK is not an error"},
		{"csiError: {method: NodeStageVolume, code: Internal, times: 0}", "times must be a whole number above 0 or always, not \"0\""},
		{"csiError: {method: NodeStageVolume, code: Internal, times: -2}", "times must be a whole number above 0 or always"},
		{"csiError: {method: NodeStageVolume, code: Internal, times: never}", `times must be a whole number above 0 or always, not "never"`},
		{"csiError: {method: NodeStageVolume, code: Internal, plugin: sidecar}", `plugin must be controller or node, not "sidecar"`},
		{"csiError: {method: NodeStageVolume, code: Internal, node: node-x}", `there is no node "node-x" in cluster.nodes`},
		{"csiError: {method: NodeStageVolume, code: Internal, retries: 2}", `unknown field "retries"; csiError takes method, node, volume, plugin, driver, code, message, times`},
		{"csiDelay: {method: NodeStageVolume}", "csiDelay needs duration:"},
		{"csiDelay: {method: NodeStageVolume, duration: 0s}", "duration must be positive, not 0s"},
		{"csiDelay: {method: NodeStageVolume, duration: 5}", `invalid duration "5"`},
		{"csiDelay: {method: NodeStageVolume, duration: 1s, code: Internal}", `unknown field "code"`},
		{"csiHang: {}", "csiHang needs method:"},
		{"csiHang: {method: ControllerPublishVolume, limit: -1m}", "limit must be positive, not -1m"},
		{"csiHang: {method: ControllerPublishVolume, duration: 1m}", `unknown field "duration"`},
		{"csiLostAnswer: {method: CreateVolume}", "csiLostAnswer needs times:"},
		{"csiLostAnswer: {method: CreateVolum, times: 1}", `method "CreateVolum" is not a CSI method (did you mean "CreateVolume"?)`},
		{"csiLostAnswer: {method: CreateVolume, times: 101}", "times must be at most 100 for csiLostAnswer, not 101"},
		{"csiLostAnswer: {method: CreateVolume, times: 0}", `times must be a whole number above 0, not "0"`},
		{"csiLostAnswer: {method: CreateVolume, times: always}", `times must be a whole number above 0, not "always"`},
		{"csiLostAnswer: {method: CreateVolume, times: 1, firstAttempt: yes please}", "firstAttempt"},
		{"csiLostAnswer: {method: CreateVolume, times: 1, code: Internal}", `unknown field "code"`},
		{"driverCrashMidCall: {method: CreateVolume}", "driverCrashMidCall needs times:"},
		{"driverCrashMidCall: {method: CreateVolum, times: 1}", `method "CreateVolum" is not a CSI method (did you mean "CreateVolume"?)`},
		{"driverCrashMidCall: {method: 'Node*', times: 1}", `driverCrashMidCall needs one CSI method, not the pattern "Node*"`},
		{"driverCrashMidCall: {method: CreateVolume, times: 21}", "times must be at most 20 for driverCrashMidCall, not 21"},
		{"driverCrashMidCall: {method: CreateVolume, times: always}", `times must be a whole number above 0, not "always"`},
		{"driverCrashMidCall: {method: CreateVolume, times: 1, limit: 1m}", `unknown field "limit"`},
		{"sidecarRestart: {}", "sidecarRestart needs component: (one of external-provisioner, external-attacher, external-resizer, csi-snapshotter, snapshot-controller)"},
		{"sidecarRestart: {component: external-provisoner}", `component "external-provisoner" is not a sidecar`},
		{"sidecarRestart: {component: kubelet:node-a}", `component "kubelet:node-a" is not a sidecar sidecarRestart restarts`},
		{"sidecarRestart: {component: external-attacher, times: 1}", `unknown field "times"`},
		{"csiHeal: {method: Frobnicate}", `method "Frobnicate" is not a CSI method`},
		{"csiHeal: {method: NodeStageVolume, times: 1}", `unknown field "times"`},

		{"driverCrash: {}", "driverCrash needs plugin:"},
		{"driverCrash: {plugin: node}", "driverCrash of plugin: node needs node: (the node whose plugin it is)"},
		{"driverCrash: {plugin: controller, node: node-a}", "driverCrash of plugin: controller takes no node:"},
		{"driverCrash: {plugin: kubelet}", `plugin must be controller or node, not "kubelet"`},
		{"driverRestart: {plugin: controller}", "driverRestart needs state:"},
		{"driverRestart: {plugin: controller, state: wipe}", `state must be keep (the plugin finds its state directory as it was) or lose (it starts with an empty one), not "wipe"`},
		{"driverRestart: {plugin: node, state: keep}", "driverRestart of plugin: node needs node:"},

		{"apiConflict: {component: external-provisioner}", "apiConflict needs times:"},
		{"apiConflict: {component: external-provisoner, times: 3}", `unknown component "external-provisoner"`},
		{"apiConflict: {component: csi-provisioner, times: 3}", `unknown component "csi-provisioner"; the components are persistentvolume-binder`},
		{"apiConflict: {component: external-provisioner, times: 0}", `times must be a whole number above 0, not "0"`},
		{"apiConflict: {component: external-provisioner, times: always}", `times must be a whole number above 0, not "always"`},
		{"apiConflict: {component: 'kubelet:node-z', times: 1}", `component "kubelet:node-z": there is no node "node-z" in cluster.nodes`},
		{"watchDrop: {component: attachdetach-controller, times: 1}", "watchDrop needs kind:"},
		{"apiServerDown: {}", "apiServerDown needs duration:"},
		{"apiServerDown: {duration: 2h}", "duration must be at most 1h0m0s, not 2h0m0s"},
		{"apiServerDown: {duration: 30}", `invalid duration "30"`},
		{"apiServerDown: {duration: 30s, component: external-provisioner}", `unknown field "component"`},
		{"apiSlowWrites: {duration: 1m}", "apiSlowWrites needs latency:"},
		{"apiSlowWrites: {duration: 1m, latency: 90s}", "latency must be at most 1m0s, not 1m30s"},
		{"apiSlowWrites: {duration: 1m, latency: 1s, component: csi-provisioner}", `unknown component "csi-provisioner"`},
		{"apiThrottle: {}", "apiThrottle needs one of times: (how many requests get 429) or duration:"},
		{"apiThrottle: {times: 3, duration: 10s}", "apiThrottle needs one of times:"},
		{"apiThrottle: {times: 1001}", "times must be at most 1000 for apiThrottle, not 1001"},
		{"apiThrottle: {times: 3, retryAfter: 1500ms}", "retryAfter must be whole seconds"},
		{"apiThrottle: {times: 3, retryAfter: 2m}", "retryAfter must be at most 1m0s, not 2m0s"},
		{"watchDrop: {component: attachdetach-controller, kind: widgets, times: 1}", `kind "widgets" is not a resource the simulated components watch; use one of pods, persistentvolumeclaims`},
		{"watchDrop: {component: attachdetach-controller, kind: pods.storage.k8s.io, times: 1}", `kind "pods.storage.k8s.io" is not a resource`},
	}
	for _, tt := range tests {
		t.Run(tt.step, func(t *testing.T) {
			_, err := parseWithFiles(t, "cluster: {nodes: [node-a, node-b]}\nsteps:\n  - "+tt.step+"\n", nil)
			var perrs ParseErrors
			if !errors.As(err, &perrs) {
				t.Fatalf("error %v (%T), want ParseErrors", err, err)
			}
			if len(perrs) != 1 {
				t.Errorf("%d errors, want 1:\n%v", len(perrs), err)
			}
			kind, _, _ := strings.Cut(tt.step, ":")
			prefix := "x.yaml:3: step 1 (" + kind + "): "
			if msg := perrs[0].Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.want) {
				t.Errorf("error\n%s\nwant it to start with %q and contain\n%s", msg, prefix, tt.want)
			}
		})
	}
}

func TestParseFaultStepVariables(t *testing.T) {
	_, err := parseWithFiles(t, `steps:
  - wait: {object: pvc/data, jsonPath: '{.spec.volumeName}', save: {pv: '{.spec.volumeName}'}}
  - csiError: {method: NodeStageVolume, code: Internal, volume: '${pv}'}
  - csiError: {method: NodeStageVolume, code: Internal, volume: '${nope}'}
`, nil)
	if err == nil || !strings.Contains(err.Error(), "x.yaml:4:") || strings.Contains(err.Error(), "x.yaml:3:") {
		t.Fatalf("error %v, want one at line 4 only (${nope} is not set)", err)
	}
	s, err := parseWithFiles(t, `steps:
  - wait: {object: pvc/data, jsonPath: '{.spec.volumeName}', save: {pv: '{.spec.volumeName}'}}
  - csiError: {method: NodeStageVolume, code: Internal, volume: '${pv}'}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := expandStep(s.Steps[1], map[string]string{"pv": "pvc-1"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Fault.CSI.Volume != "pvc-1" {
		t.Errorf("volume %q after expansion, want pvc-1", st.Fault.CSI.Volume)
	}
}

// fakeInjector is a backend that injects the faults of the kinds it can,
// recording them, and refuses the others.
type fakeInjector struct {
	fakeBackend
	can      []fault.Kind
	injected []fault.Fault
}

func (b *fakeInjector) CanInject(f fault.Fault) error {
	for _, k := range b.can {
		if k == f.Kind {
			return nil
		}
	}
	return fault.Unsupported(f.Kind, "the fake backend", "it only injects "+strings.Join(faultKinds(b.can), ", "))
}

func (b *fakeInjector) InjectFault(_ context.Context, f fault.Fault) error {
	if err := b.CanInject(f); err != nil {
		return err
	}
	b.injected = append(b.injected, f)
	return nil
}

func faultKinds(ks []fault.Kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

func TestRunRefusesFaultsTheBackendCannotInject(t *testing.T) {
	src := `steps:
  - apply:
      manifest: |
        {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}}
  - nodeLoss: {node: node-1}
  - csiHang: {method: ControllerPublishVolume}
`
	tests := []struct {
		name    string
		backend Backend
		wantErr string
		// unsupported: the error is a *fault.UnsupportedError.
		unsupported bool
	}{
		{name: "no injector at all", backend: fakeBackend{},
			wantErr: `step 2 "node-loss on node-1" at x.yaml:5: node-loss needs a backend that can inject faults`},
		{name: "injector that cannot hang calls", backend: &fakeInjector{can: []fault.Kind{fault.NodeLoss}},
			wantErr:     `step 3 "csi-hang ControllerPublishVolume" at x.yaml:6: csi-hang cannot be injected on the fake backend: it only injects node-loss`,
			unsupported: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, src)
			s.File = "x.yaml"
			cluster := newFakeCluster(clock.RealClock{})
			res, err := (&Runner{Backend: tt.backend}).run(context.Background(), s, cluster.objects)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			var uerr *fault.UnsupportedError
			if errors.As(err, &uerr) != tt.unsupported {
				t.Errorf("errors.As(*fault.UnsupportedError) = %v, want %v", !tt.unsupported, tt.unsupported)
			}
			if n := len(cluster.client.Actions()); n != 0 {
				t.Errorf("%d API calls were made before refusing the scenario", n)
			}
			for _, st := range res.Steps {
				if st.Outcome != NotRun {
					t.Errorf("step %d outcome %s, want not run", st.Step, st.Outcome)
				}
			}
			if inj, ok := tt.backend.(*fakeInjector); ok && len(inj.injected) > 0 {
				t.Errorf("faults injected before the refusal: %v", inj.injected)
			}
		})
	}
}

func TestRunInjectsFaultsTheBackendCan(t *testing.T) {
	s := mustParse(t, `steps:
  - nodeLoss: {node: node-1}
  - csiHang: {method: ControllerPublishVolume, times: 1}
`)
	inj := &fakeInjector{can: []fault.Kind{fault.NodeLoss, fault.CSIHang}}
	cluster := newFakeCluster(clock.RealClock{})
	res, err := (&Runner{Backend: inj}).run(context.Background(), s, cluster.objects)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed() {
		t.Errorf("result %+v, want passed", res)
	}
	want := []fault.Fault{{Kind: fault.NodeLoss, Node: "node-1"}, {Kind: fault.CSIHang, Times: 1, CSI: fault.CSI{Method: "ControllerPublishVolume"}}}
	if len(inj.injected) != len(want) || inj.injected[0] != want[0] || inj.injected[1] != want[1] {
		t.Errorf("injected %+v, want %+v", inj.injected, want)
	}
}

// undoingInjector is a fake backend whose faults outlast the run.
type undoingInjector struct {
	fakeInjector
	undone int
}

func (b *undoingInjector) UndoFaults(context.Context) error {
	b.undone++
	return nil
}

// TestRunUndoesFaultsOnASharedCluster: with Restore, the runner has a
// FaultUndoer backend put back what the faults left, once, at the end;
// without it, never.
func TestRunUndoesFaultsOnASharedCluster(t *testing.T) {
	for _, restore := range []bool{true, false} {
		s := mustParse(t, `steps:
  - nodeLoss: {node: node-1}
`)
		inj := &undoingInjector{fakeInjector: fakeInjector{can: []fault.Kind{fault.NodeLoss}}}
		cluster := newFakeCluster(clock.RealClock{})
		if _, err := (&Runner{Backend: inj, Restore: restore, Namespace: "default"}).run(context.Background(), s, cluster.objects); err != nil {
			t.Fatal(err)
		}
		want := 0
		if restore {
			want = 1
		}
		if inj.undone != want {
			t.Errorf("Restore %v: UndoFaults called %d times, want %d", restore, inj.undone, want)
		}
	}
}
