package faults

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/fault"
)

func testKind() *Kind {
	return &Kind{Config: KindConfig{Cluster: "csisim-e2e"}}
}

func cmd(argv ...string) Command { return Command{Argv: argv} }

func zero() *int64 { var z int64; return &z }

// TestPlan is the fault → action table of the kind backend.
func TestPlan(t *testing.T) {
	const w = "csisim-e2e-worker"
	outOfService := corev1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}
	tests := []struct {
		name  string
		fault fault.Fault
		want  []Action
	}{
		{"node-loss kills the node container", fault.Fault{Kind: fault.NodeLoss, Node: w},
			[]Action{cmd("docker", "kill", w)}},
		{"node-return starts it and waits for Ready", fault.Fault{Kind: fault.NodeReturn, Node: "csisim-e2e-worker2"},
			[]Action{cmd("docker", "start", "csisim-e2e-worker2"), WaitNodeReady{Node: "csisim-e2e-worker2", Status: corev1.ConditionTrue, Timeout: 5 * time.Minute}}},
		{"out-of-service taints through client-go", fault.Fault{Kind: fault.OutOfService, Node: w},
			[]Action{TaintNode{Node: w, Taint: outOfService}}},
		{"out-of-service on the control plane is allowed", fault.Fault{Kind: fault.OutOfService, Node: "csisim-e2e-control-plane"},
			[]Action{TaintNode{Node: "csisim-e2e-control-plane", Taint: outOfService}}},
		{"kubelet-restart restarts its unit", fault.Fault{Kind: fault.KubeletRestart, Node: w},
			[]Action{cmd("docker", "exec", w, "systemctl", "restart", "kubelet")}},
		{"stale-volumeattachment by hand, for a node that is gone", fault.Fault{Kind: fault.StaleVolumeAttachment, Node: "gone-node", Claim: "data"},
			[]Action{StaleVolumeAttachment{Namespace: "default", Claim: "data", Node: "gone-node"}}},
		{"stale-volumeattachment in a namespace", fault.Fault{Kind: fault.StaleVolumeAttachment, Node: w, Claim: "data", Namespace: "team-a"},
			[]Action{StaleVolumeAttachment{Namespace: "team-a", Claim: "data", Node: w}}},
		{"controller-manager-restart stops its container", fault.Fault{Kind: fault.ControllerManagerRestart},
			[]Action{cmd("docker", "exec", "csisim-e2e-control-plane", "sh", "-c", "crictl stop $(crictl ps --quiet --name '^kube-controller-manager$')")}},
		{"driver-restart of a node plugin kills its container", fault.Fault{Kind: fault.DriverRestart, Plugin: fault.Node, Node: w},
			[]Action{cmd("docker", "exec", w, "sh", "-c",
				"crictl stop --timeout 0 $(crictl ps --quiet --name '^csisim-plugin$' --label io.kubernetes.pod.namespace=csisim)")}},
		{"driver-restart of the controller deletes its pod", fault.Fault{Kind: fault.DriverRestart, Plugin: fault.Controller},
			[]Action{DeletePods{Namespace: "csisim", LabelSelector: "app.kubernetes.io/component=controller,app.kubernetes.io/part-of=csisim", GracePeriodSeconds: zero()}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := testKind().Plan(tt.fault)
			if err != nil {
				t.Fatalf("Plan(%s): %v", tt.fault.Describe(), err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Plan(%s):\n got  %s\n want %s", tt.fault.Describe(), render(got), render(tt.want))
			}
			// Plan is pure: the same fault, the same plan.
			again, _ := testKind().Plan(tt.fault)
			if !reflect.DeepEqual(got, again) {
				t.Errorf("Plan(%s) differs between calls: %s, then %s", tt.fault.Describe(), render(got), render(again))
			}
			if err := testKind().CanInject(tt.fault); err != nil {
				t.Errorf("CanInject(%s) = %v although Plan succeeds", tt.fault.Describe(), err)
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	tests := []struct {
		fault fault.Fault
		want  string
	}{
		{fault.Fault{Kind: fault.NodeLoss, Node: "postgres"}, `"postgres" is not a node of kind cluster "csisim-e2e"`},
		{fault.Fault{Kind: fault.NodeLoss, Node: "other-worker"}, `not a node of kind cluster`},
		{fault.Fault{Kind: fault.NodeLoss, Node: "csisim-e2e-worker0"}, `not a node of kind cluster`},
		{fault.Fault{Kind: fault.NodeLoss, Node: "csisim-e2e-control-plane"}, `is a control-plane node; stopping it stops the API server`},
		{fault.Fault{Kind: fault.NodeReturn, Node: "node-1"}, `"node-1" is not a node of kind cluster`},
		{fault.Fault{Kind: fault.OutOfService, Node: "csisim-e2e-worker; rm -rf /"}, `is not a node of kind cluster`},
		{fault.Fault{Kind: fault.KubeletRestart, Node: "x"}, `is not a node of kind cluster`},
		{fault.Fault{Kind: fault.StaleVolumeAttachment, Node: "N_1", Claim: "data"}, `node "N_1" is not a valid node name`},
		{fault.Fault{Kind: fault.StaleVolumeAttachment, Node: "n1"}, `no claim`},
		{fault.Fault{Kind: fault.DriverRestart, Plugin: fault.Node, Node: "node-1"}, `"node-1" is not a node of kind cluster`},
	}
	for _, tt := range tests {
		t.Run(tt.fault.Describe(), func(t *testing.T) {
			got, err := testKind().Plan(tt.fault)
			if err == nil {
				t.Fatalf("Plan(%s) = %s, want an error containing %q", tt.fault.Describe(), render(got), tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Plan(%s) error:\n %v\nwant it to contain\n %s", tt.fault.Describe(), err, tt.want)
			}
			var uerr *fault.UnsupportedError
			if errors.As(err, &uerr) {
				t.Errorf("Plan(%s): a bad fault must not read as unsupported: %v", tt.fault.Describe(), err)
			}
		})
	}
}

func TestPlanRefusesWhatKindCannotInject(t *testing.T) {
	tests := []struct {
		fault fault.Fault
		want  string
	}{
		{fault.Fault{Kind: fault.CSIError, CSI: fault.CSI{Method: "NodeStageVolume", Code: codes.Unavailable}}, "drivers/faultproxy"},
		{fault.Fault{Kind: fault.CSIHang, CSI: fault.CSI{Method: "ControllerPublishVolume"}}, "drivers/faultproxy"},
		{fault.Fault{Kind: fault.CSIHeal}, "drivers/faultproxy"},
		{fault.Fault{Kind: fault.DriverCrash, Plugin: fault.Node, Node: "csisim-e2e-worker"}, "the kubelet restarts a crashed container at once"},
		{fault.Fault{Kind: fault.DriverRestart, Plugin: fault.Controller, LoseState: true}, "state: lose would need the deployment changed"},
		{fault.Fault{Kind: fault.NodePluginMissing, Node: "csisim-e2e-worker"}, "runs on every node"},
		{fault.Fault{Kind: fault.MissingMountPropagation, Node: "csisim-e2e-worker"}, "the same on every node"},
		{fault.Fault{Kind: fault.APIConflict, Component: "external-provisioner", Times: 1}, "answer 409"},
		{fault.Fault{Kind: fault.WatchDrop, Component: "attachdetach-controller", Resource: "pods", Times: 1}, "drop watch events"},
		{fault.Fault{Kind: fault.APIServerDown, API: fault.API{Duration: 30 * time.Second}}, "is not placed between them"},
		{fault.Fault{Kind: fault.APISlowWrites, API: fault.API{Duration: time.Minute, Latency: time.Second}}, "static pod"},
		{fault.Fault{Kind: fault.APIThrottle, Times: 3, API: fault.API{RetryAfter: time.Second}}, "injects API server faults on --backend realkube"},
		{fault.Fault{Kind: "disk-full"}, "not a fault csisim knows"},
	}
	for _, tt := range tests {
		t.Run(tt.fault.Describe(), func(t *testing.T) {
			err := testKind().CanInject(tt.fault)
			var uerr *fault.UnsupportedError
			if !errors.As(err, &uerr) || uerr.Kind != tt.fault.Kind || uerr.Backend != "kind" {
				t.Fatalf("CanInject(%s) = %v, want a *fault.UnsupportedError for %s on kind", tt.fault.Describe(), err, tt.fault.Kind)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func TestEveryFaultHasAPlanOrAReason(t *testing.T) {
	for _, k := range fault.Kinds {
		_, err := testKind().Plan(fault.Fault{Kind: k})
		if err != nil && strings.Contains(err.Error(), "not a fault csisim knows") {
			t.Errorf("fault %s is neither planned nor refused with a reason", k)
		}
	}
}

func TestPlanNeedsConfig(t *testing.T) {
	k := &Kind{}
	if _, err := k.Plan(fault.Fault{Kind: fault.NodeLoss, Node: "x-worker"}); err == nil || !strings.Contains(err.Error(), "KindConfig.Cluster is required") {
		t.Errorf("Plan without cluster name: %v", err)
	}
	k = &Kind{Config: KindConfig{Cluster: "c", Docker: "/usr/bin/podman"}}
	got, err := k.Plan(fault.Fault{Kind: fault.NodeLoss, Node: "c-worker3"})
	if err != nil || !reflect.DeepEqual(got, []Action{cmd("/usr/bin/podman", "kill", "c-worker3")}) {
		t.Errorf("Plan with Docker set: %s, %v", render(got), err)
	}
}

func TestStrings(t *testing.T) {
	for _, tt := range []struct {
		a    Action
		want string
	}{
		{cmd("docker", "exec", "n", "sh", "-c", "crictl ps $(x) 'y'"), `docker exec n sh -c 'crictl ps $(x) '\''y'\'''`},
		{TaintNode{Node: "n", Taint: fault.OutOfServiceTaint(time.Time{})}, "client-go: taint node n node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"},
		{UntaintNode{Node: "n", Key: "k", Effect: corev1.TaintEffectNoExecute}, "client-go: untaint node n k:NoExecute"},
		{DeletePods{Namespace: "csisim", LabelSelector: "a=b", Node: "n", GracePeriodSeconds: zero()}, "client-go: delete pods -n csisim -l a=b on node n --grace-period=0"},
		{DeletePods{Namespace: "csisim", LabelSelector: "a=b"}, "client-go: delete pods -n csisim -l a=b on any node"},
		{StaleVolumeAttachment{Namespace: "default", Claim: "data", Node: "n"}, "client-go: create the VolumeAttachment of claim default/data on node n"},
		{WaitNodeReady{Node: "n", Status: corev1.ConditionTrue, Timeout: time.Minute}, "client-go: wait until node n has Ready=True (at most 1m0s)"},
	} {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("String() = %s, want %s", got, tt.want)
		}
	}
}

func render(actions []Action) string {
	s := make([]string, len(actions))
	for i, a := range actions {
		s[i] = "[" + a.String() + "]"
	}
	return strings.Join(s, " ")
}
