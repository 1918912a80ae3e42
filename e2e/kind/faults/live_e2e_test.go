//go:build e2e

package faults

// Live tests of the kind executor, on the cluster e2e/kind/run.sh made
// (it sets CSISIM_KIND_CLUSTER and passes -kubeconfig). On any other
// cluster, e.g. under `make e2e`, they skip: they stop containers and
// restart the driver.

import (
	"context"
	"flag"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/csisim/csisim/deploy"
	"github.com/csisim/csisim/fault"
)

var kubeconfig = flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the kind cluster")

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) { l.t.Log(string(p)); return len(p), nil }

func liveKind(t *testing.T) (*Kind, kubernetes.Interface, string) {
	t.Helper()
	cluster := os.Getenv("CSISIM_KIND_CLUSTER")
	if cluster == "" {
		t.Skip("CSISIM_KIND_CLUSTER is not set: not a cluster made by e2e/kind/run.sh, so no faults are injected into it")
	}
	if *kubeconfig == "" {
		t.Fatal("set -kubeconfig or KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := NewKind(KindConfig{Cluster: cluster}, client)
	k.Log = testLog{t}
	return k, client, cluster + "-worker"
}

// nodePlugin returns the node plugin pod on node, if there is one.
func nodePlugin(ctx context.Context, client kubernetes.Interface, node string) (*corev1.Pod, error) {
	pods, err := client.CoreV1().Pods(deploy.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: deploy.ComponentLabel + "=" + deploy.ComponentNode,
		FieldSelector: "spec.nodeName=" + node,
	})
	if err != nil || len(pods.Items) == 0 {
		return nil, err
	}
	return &pods.Items[0], nil
}

func ready(p *corev1.Pod) bool {
	return p != nil && p.DeletionTimestamp == nil && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

func TestLiveDriverRestartRestartsThePlugin(t *testing.T) {
	k, client, worker := liveKind(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	before, err := nodePlugin(ctx, client, worker)
	if err != nil || !ready(before) {
		t.Fatalf("no Ready node plugin on %s before the fault: %v", worker, err)
	}
	restarts := func(p *corev1.Pod) int32 {
		var n int32
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == deploy.PluginContainer {
				n = c.RestartCount
			}
		}
		return n
	}
	if err := k.InjectFault(ctx, fault.Fault{Kind: fault.DriverRestart, Plugin: fault.Node, Node: worker}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 3*time.Minute, false, func(ctx context.Context) (bool, error) {
		p, err := nodePlugin(ctx, client, worker)
		return err == nil && ready(p) && p.UID == before.UID && restarts(p) > restarts(before), nil
	})
	if err != nil {
		t.Fatalf("the node plugin on %s was not restarted in place after driver-restart: %v", worker, err)
	}
}

func TestLiveOutOfServiceTaint(t *testing.T) {
	k, client, worker := liveKind(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hasTaint := func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, worker, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		taint := fault.OutOfServiceTaint(time.Time{})
		return slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.MatchTaint(&taint) })
	}
	untaint := UntaintNode{Node: worker, Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoExecute}
	t.Cleanup(func() { _ = k.Execute(context.Background(), []Action{untaint}) })
	if err := k.InjectFault(ctx, fault.Fault{Kind: fault.OutOfService, Node: worker}); err != nil {
		t.Fatal(err)
	}
	if !hasTaint() {
		t.Fatalf("%s has no out-of-service taint after the fault", worker)
	}
	if err := k.Execute(ctx, []Action{untaint}); err != nil {
		t.Fatal(err)
	}
	if hasTaint() {
		t.Fatalf("%s still has the out-of-service taint after untainting", worker)
	}
}
