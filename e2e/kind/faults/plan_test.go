package faults

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func testKind() *Kind {
	return &Kind{Config: KindConfig{
		Cluster:    "csisim-e2e",
		Kubeconfig: "/tmp/kc",
		DeployDir:  "/repo/deploy/kubernetes",
	}}
}

func params(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func cmd(argv ...string) Command { return Command{Argv: argv} }

func zero() *int64 { var z int64; return &z }

// TestPlan is the fault → action table of the kind backend.
func TestPlan(t *testing.T) {
	const w = "csisim-e2e-worker"
	nodeSel := "app.kubernetes.io/component=node,app.kubernetes.io/part-of=csisim"
	tests := []struct {
		name  string
		fault Fault
		want  []Action
	}{
		{"node-loss stops the node container", Fault{NodeLoss, params("node", w)},
			[]Action{cmd("docker", "stop", w)}},
		{"node-loss method=kill", Fault{NodeLoss, params("node", "csisim-e2e-worker2", "method", "kill")},
			[]Action{cmd("docker", "kill", "csisim-e2e-worker2")}},
		{"node-return starts it and waits for Ready", Fault{NodeReturn, params("node", w)},
			[]Action{cmd("docker", "start", w), WaitNodeReady{Node: w, Status: corev1.ConditionTrue, Timeout: 5 * time.Minute}}},
		{"node-return timeout", Fault{NodeReturn, params("node", w, "timeout", "90s")},
			[]Action{cmd("docker", "start", w), WaitNodeReady{Node: w, Status: corev1.ConditionTrue, Timeout: 90 * time.Second}}},
		{"out-of-service taints through client-go", Fault{OutOfService, params("node", w)},
			[]Action{TaintNode{Node: w, Taint: corev1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}}},
		{"out-of-service on the control plane is allowed", Fault{OutOfService, params("node", "csisim-e2e-control-plane")},
			[]Action{TaintNode{Node: "csisim-e2e-control-plane", Taint: OutOfServiceTaint}}},
		{"clear-out-of-service", Fault{ClearOutOfService, params("node", w)},
			[]Action{UntaintNode{Node: w, Key: "node.kubernetes.io/out-of-service", Effect: corev1.TaintEffectNoExecute}}},
		{"stale-volumeattachment by hand, named as kubelet would", Fault{StaleVolumeAttachment, params("node", "gone-node", "pv", "pvc-1", "volumeHandle", "vol-1")},
			[]Action{CreateVolumeAttachment{Name: attachmentName("vol-1", "hostpath.csisim.io", "gone-node"),
				Attacher: "hostpath.csisim.io", Node: "gone-node", PersistentVolume: "pvc-1"}}},
		{"stale-volumeattachment without handle", Fault{StaleVolumeAttachment, params("node", w, "pv", "pvc-1")},
			[]Action{CreateVolumeAttachment{Name: staleName("pvc-1", w), Attacher: "hostpath.csisim.io", Node: w, PersistentVolume: "pvc-1"}}},
		{"stale-volumeattachment explicit name", Fault{StaleVolumeAttachment, params("mode", "create", "node", w, "pv", "pvc-1", "name", "stale")},
			[]Action{CreateVolumeAttachment{Name: "stale", Attacher: "hostpath.csisim.io", Node: w, PersistentVolume: "pvc-1"}}},
		{"stale-volumeattachment left behind by a lost node", Fault{StaleVolumeAttachment, params("mode", "orphan", "node", w, "pod", "app")},
			[]Action{cmd("docker", "stop", w), DeletePod{Namespace: "default", Name: "app", GracePeriodSeconds: zero()}}},
		{"stale-volumeattachment orphan namespace", Fault{StaleVolumeAttachment, params("mode", "orphan", "node", w, "pod", "app", "namespace", "team-a")},
			[]Action{cmd("docker", "stop", w), DeletePod{Namespace: "team-a", Name: "app", GracePeriodSeconds: zero()}}},
		{"missing-mount-propagation applies the variant and waits for the rollout", Fault{MissingMountPropagation, nil},
			[]Action{
				cmd("kubectl", "--kubeconfig", "/tmp/kc", "apply", "-f", "/repo/deploy/kubernetes/variants/no-mount-propagation/31-node.yaml"),
				cmd("kubectl", "--kubeconfig", "/tmp/kc", "-n", "csisim", "rollout", "status", "daemonset/csisim-node", "--timeout=5m0s"),
			}},
		{"restore-mount-propagation applies the regular DaemonSet", Fault{RestoreMountPropagation, params("timeout", "2m")},
			[]Action{
				cmd("kubectl", "--kubeconfig", "/tmp/kc", "apply", "-f", "/repo/deploy/kubernetes/31-node.yaml"),
				cmd("kubectl", "--kubeconfig", "/tmp/kc", "-n", "csisim", "rollout", "status", "daemonset/csisim-node", "--timeout=2m0s"),
			}},
		{"driver-crash force-deletes the node plugin pod on the node", Fault{DriverCrash, params("node", w)},
			[]Action{DeletePods{Namespace: "csisim", LabelSelector: nodeSel, Node: w, GracePeriodSeconds: zero()}}},
		{"driver-crash kill-container", Fault{DriverCrash, params("node", w, "method", "kill-container")},
			[]Action{cmd("docker", "exec", w, "sh", "-c",
				"crictl stop --timeout 0 $(crictl ps --quiet --name '^csisim-plugin$' --label io.kubernetes.pod.namespace=csisim)")}},
		{"driver-crash of the controller", Fault{DriverCrash, params("component", "controller")},
			[]Action{DeletePods{Namespace: "csisim", LabelSelector: "app.kubernetes.io/component=controller,app.kubernetes.io/part-of=csisim", GracePeriodSeconds: zero()}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := testKind().Plan(tt.fault)
			if err != nil {
				t.Fatalf("Plan(%s): %v", tt.fault, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Plan(%s):\n got  %s\n want %s", tt.fault, render(got), render(tt.want))
			}
			// Plan is pure: the same fault, the same plan.
			again, _ := testKind().Plan(tt.fault)
			if !reflect.DeepEqual(got, again) {
				t.Errorf("Plan(%s) differs between calls: %s, then %s", tt.fault, render(got), render(again))
			}
		})
	}
}

// attachmentName is kubelet's name for the VolumeAttachment of a CSI volume
// (pkg/volume/csi: "csi-" + sha256 of handle, driver and node, in hex),
// computed independently of the code under test.
func attachmentName(handle, driver, node string) string {
	return "csi-" + sha256hex(handle+driver+node)
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func staleName(pv, node string) string {
	return "csisim-stale-" + sha256hex(pv + "\x00" + node)[:16]
}

func TestAttachmentNameIsKubelets(t *testing.T) {
	// A known digest, so that the helper itself is pinned.
	if got, want := sha256hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Fatalf("sha256hex(abc) = %s, want %s", got, want)
	}
	got, err := testKind().Plan(Fault{StaleVolumeAttachment, params("node", "n1", "pv", "pv1", "volumeHandle", "h1")})
	if err != nil {
		t.Fatal(err)
	}
	name := got[0].(CreateVolumeAttachment).Name
	if want := attachmentName("h1", "hostpath.csisim.io", "n1"); name != want || len(name) != len("csi-")+64 {
		t.Errorf("attachment name %q, want %q", name, want)
	}
}

func TestPlanErrors(t *testing.T) {
	tests := []struct {
		fault Fault
		want  string // in the error
	}{
		{Fault{"disk-full", nil}, `unknown fault "disk-full" (known: clear-out-of-service, driver-crash, grpc-error, missing-mount-propagation`},
		{Fault{NodeLoss, nil}, `fault node-loss: parameter "node" is required`},
		{Fault{NodeLoss, params("node", "csisim-e2e-worker", "nodes", "x")}, `unknown parameter "nodes" (allowed: node, method)`},
		{Fault{NodeLoss, params("node", "postgres")}, `"postgres" is not a node of kind cluster "csisim-e2e"`},
		{Fault{NodeLoss, params("node", "other-worker")}, `not a node of kind cluster`},
		{Fault{NodeLoss, params("node", "csisim-e2e-worker0")}, `not a node of kind cluster`},
		{Fault{NodeLoss, params("node", "csisim-e2e-control-plane")}, `is a control-plane node; stopping it stops the API server`},
		{Fault{NodeLoss, params("node", "csisim-e2e-worker", "method", "pause")}, `method="pause" is not one of stop, kill`},
		{Fault{NodeReturn, params("node", "csisim-e2e-worker", "timeout", "5")}, `timeout="5" is not a positive Go duration`},
		{Fault{OutOfService, params("node", "csisim-e2e-worker; rm -rf /")}, `is not a node of kind cluster`},
		{Fault{StaleVolumeAttachment, params("node", "n1")}, `mode=create needs parameter "pv"`},
		{Fault{StaleVolumeAttachment, params("pv", "pv1")}, `parameter "node" is required`},
		{Fault{StaleVolumeAttachment, params("node", "N_1", "pv", "pv1")}, `node "N_1" is not a valid node name`},
		{Fault{StaleVolumeAttachment, params("node", "n1", "pv", "pv1", "pod", "app")}, `parameter "pod" does not apply to mode=create`},
		{Fault{StaleVolumeAttachment, params("mode", "orphan", "node", "csisim-e2e-worker")}, `mode=orphan needs parameter "pod"`},
		{Fault{StaleVolumeAttachment, params("mode", "orphan", "node", "gone", "pod", "app")}, `"gone" is not a node of kind cluster`},
		{Fault{StaleVolumeAttachment, params("mode", "forge", "node", "n1")}, `mode="forge" is not one of create, orphan`},
		{Fault{DriverCrash, nil}, `parameter "node" is required (the node whose plugin crashes)`},
		{Fault{DriverCrash, params("component", "controller", "node", "csisim-e2e-worker")}, `component=controller takes no "node"`},
		{Fault{DriverCrash, params("component", "controller", "method", "kill-container")}, `supports method=delete-pod only`},
		{Fault{DriverCrash, params("component", "scheduler")}, `component="scheduler" is not one of node, controller`},
		{Fault{MissingMountPropagation, params("node", "csisim-e2e-worker")}, `unknown parameter "node" (allowed: timeout)`},
	}
	for _, tt := range tests {
		t.Run(tt.fault.String(), func(t *testing.T) {
			got, err := testKind().Plan(tt.fault)
			if err == nil {
				t.Fatalf("Plan(%s) = %s, want an error containing %q", tt.fault, render(got), tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Plan(%s) error:\n %v\nwant it to contain\n %s", tt.fault, err, tt.want)
			}
			if errors.Is(err, ErrUnsupported) {
				t.Errorf("Plan(%s): a bad fault must not read as unsupported: %v", tt.fault, err)
			}
		})
	}
}

func TestPlanNeedsConfig(t *testing.T) {
	k := &Kind{}
	if _, err := k.Plan(Fault{NodeLoss, params("node", "x-worker")}); err == nil || !strings.Contains(err.Error(), "KindConfig.Cluster is required") {
		t.Errorf("Plan without cluster name: %v", err)
	}
	k = &Kind{Config: KindConfig{Cluster: "c"}}
	if _, err := k.Plan(Fault{MissingMountPropagation, nil}); err == nil || !strings.Contains(err.Error(), "KindConfig.DeployDir") {
		t.Errorf("Plan without DeployDir: %v", err)
	}
	// Other commands and no kubeconfig.
	k = &Kind{Config: KindConfig{Cluster: "c", DeployDir: "d", Docker: "/usr/bin/podman", Kubectl: "kc"}}
	got, err := k.Plan(Fault{NodeLoss, params("node", "c-worker3")})
	if err != nil || !reflect.DeepEqual(got, []Action{cmd("/usr/bin/podman", "stop", "c-worker3")}) {
		t.Errorf("Plan with Docker set: %s, %v", render(got), err)
	}
	got, err = k.Plan(Fault{RestoreMountPropagation, nil})
	if err != nil || !reflect.DeepEqual(got[0], cmd("kc", "apply", "-f", "d/31-node.yaml")) {
		t.Errorf("Plan with Kubectl set and no kubeconfig: %s, %v", render(got), err)
	}
}

func TestGRPCErrorIsUnsupportedOnKind(t *testing.T) {
	_, err := testKind().Plan(Fault{GRPCError, params("method", "NodeStageVolume", "code", "Unavailable")})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Plan(grpc-error) = %v, want ErrUnsupported", err)
	}
	var ue *UnsupportedError
	if !errors.As(err, &ue) || ue.Fault != GRPCError || ue.Backend != "kind" {
		t.Fatalf("Plan(grpc-error) = %#v, want an *UnsupportedError for grpc-error on kind", err)
	}
	for _, want := range []string{"fault grpc-error is unsupported on kind", "drivers/faultproxy"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestEveryFaultHasAPlanOrAReason(t *testing.T) {
	for _, name := range Names() {
		if _, ok := kindParams[name]; !ok {
			t.Errorf("fault %s has no entry in kindParams", name)
		}
	}
	if len(kindParams) != len(Names()) {
		t.Errorf("kindParams has %d faults, Names() %d", len(kindParams), len(Names()))
	}
}

func TestStrings(t *testing.T) {
	for _, tt := range []struct {
		a    fmtStringer
		want string
	}{
		{Fault{NodeLoss, params("node", "n", "method", "kill")}, "node-loss method=kill node=n"},
		{cmd("docker", "exec", "n", "sh", "-c", "crictl ps $(x) 'y'"), `docker exec n sh -c 'crictl ps $(x) '\''y'\'''`},
		{TaintNode{Node: "n", Taint: OutOfServiceTaint}, "client-go: taint node n node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"},
		{UntaintNode{Node: "n", Key: "k", Effect: corev1.TaintEffectNoExecute}, "client-go: untaint node n k:NoExecute"},
		{DeletePods{Namespace: "csisim", LabelSelector: "a=b", Node: "n", GracePeriodSeconds: zero()}, "client-go: delete pods -n csisim -l a=b on node n --grace-period=0"},
		{DeletePods{Namespace: "csisim", LabelSelector: "a=b"}, "client-go: delete pods -n csisim -l a=b on any node"},
		{DeletePod{Namespace: "default", Name: "app", GracePeriodSeconds: zero()}, "client-go: delete pod -n default app --grace-period=0"},
		{CreateVolumeAttachment{Name: "va", Attacher: "d", Node: "n", PersistentVolume: "pv"}, "client-go: create volumeattachment va (attacher d, node n, pv pv)"},
		{WaitNodeReady{Node: "n", Status: corev1.ConditionTrue, Timeout: time.Minute}, "client-go: wait until node n has Ready=True (at most 1m0s)"},
	} {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("String() = %s, want %s", got, tt.want)
		}
	}
}

type fmtStringer interface{ String() string }

func render(actions []Action) string {
	s := make([]string, len(actions))
	for i, a := range actions {
		s[i] = "[" + a.String() + "]"
	}
	return strings.Join(s, " ")
}
