package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/csisim/csisim/deploy"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/scenarios/apifaults"
)

// Defaults of KindConfig, and how long a node may take to return.
const (
	DefaultDocker = "docker"
	// NodeReturnTimeout bounds waiting for a returned node to be Ready.
	NodeReturnTimeout = 5 * time.Minute
)

// KindConfig describes the kind cluster faults are injected into, with the
// driver deployed from deploy/kubernetes.
type KindConfig struct {
	// Cluster is the kind cluster name (kind create cluster --name). Its
	// node containers, and so its Kubernetes nodes, are named
	// <Cluster>-control-plane and <Cluster>-worker, <Cluster>-worker2, ...;
	// Plan refuses docker actions on any other container. Required.
	Cluster string
	// Docker is the docker command; DefaultDocker if empty.
	Docker string
}

// CommandRunner runs a command and returns its combined output.
type CommandRunner interface {
	Run(ctx context.Context, argv []string) ([]byte, error)
}

// ExecRunner runs commands with os/exec.
type ExecRunner struct{}

// Run runs argv[0] with the arguments argv[1:].
func (ExecRunner) Run(ctx context.Context, argv []string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	return exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
}

// Kind is the Executor for a kind cluster.
type Kind struct {
	Config KindConfig
	// Runner runs Command actions; ExecRunner if nil.
	Runner CommandRunner
	// Client performs the client-go actions.
	Client kubernetes.Interface
	// Log receives one line per action before it runs; nil: nothing.
	Log io.Writer
	// PollInterval is how often waits look; 2s if zero.
	PollInterval time.Duration
	// Now stamps NoExecute taints; time.Now if nil.
	Now func() time.Time

	// lasting is what the faults injected so far left changed (UndoFaults).
	lasting lasting
}

// NewKind returns the executor for the kind cluster cfg, acting on the API
// through client.
func NewKind(cfg KindConfig, client kubernetes.Interface) *Kind {
	return &Kind{Config: cfg, Client: client}
}

// Plan maps f to actions on the kind cluster; see the package comment for
// the table. It only reads k.Config: the same fault always yields the same
// actions. A fault kind cannot inject is a *fault.UnsupportedError.
func (k *Kind) Plan(f fault.Fault) ([]Action, error) {
	if k.Config.Cluster == "" {
		return nil, errors.New("KindConfig.Cluster is required")
	}
	switch f.Kind {
	case fault.NodeLoss:
		if err := k.checkWorker(f); err != nil {
			return nil, err
		}
		return []Action{k.docker("kill", f.Node)}, nil

	case fault.NodeReturn:
		if err := k.checkWorker(f); err != nil {
			return nil, err
		}
		return []Action{
			k.docker("start", f.Node),
			WaitNodeReady{Node: f.Node, Status: corev1.ConditionTrue, Timeout: NodeReturnTimeout},
		}, nil

	case fault.OutOfService:
		if err := k.checkNode(f); err != nil {
			return nil, err
		}
		taint := fault.OutOfServiceTaint(time.Time{})
		taint.TimeAdded = nil // stamped when it is put on the node
		return []Action{TaintNode{Node: f.Node, Taint: taint}}, nil

	case fault.KubeletRestart:
		if err := k.checkNode(f); err != nil {
			return nil, err
		}
		return []Action{k.docker("exec", f.Node, "systemctl", "restart", "kubelet")}, nil

	case fault.StaleVolumeAttachment:
		// The node may well not exist (any more): that is the point.
		if errs := validation.IsDNS1123Subdomain(f.Node); len(errs) > 0 {
			return nil, fmt.Errorf("fault %s: node %q is not a valid node name: %s", f.Kind, f.Node, strings.Join(errs, "; "))
		}
		if f.Claim == "" {
			return nil, fmt.Errorf("fault %s: no claim", f.Kind)
		}
		ns := f.Namespace
		if ns == "" {
			ns = "default"
		}
		return []Action{StaleVolumeAttachment{Namespace: ns, Claim: f.Claim, Node: f.Node}}, nil

	case fault.ControllerManagerRestart:
		// crictl stop ends the container gracefully; the kubelet restarts
		// the static pod, whose controllers rebuild their state.
		script := "crictl stop $(crictl ps --quiet --name '^kube-controller-manager$')"
		return []Action{k.docker("exec", k.Config.Cluster+"-control-plane", "sh", "-c", script)}, nil

	case fault.DriverRestart:
		return k.planDriverRestart(f)

	case fault.CSIError, fault.CSIDelay, fault.CSIHang, fault.CSILostAnswer, fault.CSIHeal:
		return nil, fault.Unsupported(f.Kind, backendName, "CSI faults are injected by drivers/faultproxy between the callers and the driver; "+
			"the kind deployment (deploy/kubernetes) connects the sidecars and the kubelet straight to the driver's socket, so there is nothing to inject them. "+
			"Run the scenario on the simulator or on --backend realkube")
	case fault.DriverCrashMidCall:
		return nil, fault.Unsupported(f.Kind, backendName, "a call must reach the driver and complete before the driver dies, which needs drivers/faultproxy between "+
			"the callers and the driver; the kind deployment connects them straight to the driver's socket. Run the scenario on the simulator or on --backend realkube")
	case fault.SidecarRestart:
		return nil, fault.Unsupported(f.Kind, backendName, "restarting one sidecar container of the controller pod is not planned yet "+
			"(driver-restart with plugin: controller restarts the whole pod); run the scenario on the simulator or on --backend realkube")
	case fault.DriverCrash:
		return nil, fault.Unsupported(f.Kind, backendName, "the driver runs in pods, and the kubelet restarts a crashed container at once: "+
			"a plugin that stays down until driver-restart cannot be made; driver-restart with state: keep is the crash kind can do")
	case fault.NodePluginMissing:
		return nil, fault.Unsupported(f.Kind, backendName, "the node plugin DaemonSet of deploy/kubernetes runs on every node; keeping it off one node means changing the deployment")
	case fault.NodeVolumeLimit, fault.VolumeHealth:
		return nil, fault.Unsupported(f.Kind, backendName, "the driver's storage backend lives in the plugin pods' host paths, which csisim does not reach into on kind")
	case fault.MountBusy:
		return nil, fault.Unsupported(f.Kind, backendName, "the pod's mounts are inside the kind node's container, where csisim runs no process to hold one; "+
			"run the scenario on the simulator")
	case fault.MissingMountPropagation:
		return nil, fault.Unsupported(f.Kind, backendName, "the mount propagation of the node plugin is the DaemonSet's, the same on every node; "+
			"deploy/kubernetes/"+deploy.NoMountPropagationVariant+" changes it for all of them")
	case fault.APIConflict, fault.WatchDrop:
		return nil, fault.Unsupported(f.Kind, backendName, "the components are real processes talking to a real API server, which csisim cannot make answer 409 or drop watch events for one of them")
	case fault.APIServerDown, fault.APISlowWrites, fault.APIThrottle:
		return nil, fault.Unsupported(f.Kind, backendName, "kind's kube-apiserver is a static pod that every component, kubelets included, reaches directly "+
			"(and stopping it stops the cluster kind itself is driven through); the reverse proxy that injects API server faults on --backend realkube "+
			"(realkube/apiproxy) is not placed between them here. Run the scenario on the simulator or on --backend realkube")
	}
	return nil, fault.Unsupported(f.Kind, backendName, "it is not a fault csisim knows")
}

// planDriverRestart kills a plugin and lets Kubernetes bring it back, with
// its state: the node plugin's state directory is on the node, and so is
// kept; a lost state would need the deployment changed.
func (k *Kind) planDriverRestart(f fault.Fault) ([]Action, error) {
	if f.LoseState {
		return nil, fault.Unsupported(f.Kind, backendName, "the plugins' state directories are host paths that a restarted pod finds again; state: lose would need the deployment changed")
	}
	if f.Plugin == fault.Controller {
		selector := labels.Set{deploy.PartOfLabel: deploy.PartOf, deploy.ComponentLabel: deploy.ComponentController}.String()
		// Force deletion: its Deployment starts a new pod.
		return []Action{DeletePods{Namespace: deploy.Namespace, LabelSelector: selector, GracePeriodSeconds: ptr[int64](0)}}, nil
	}
	if err := k.checkNode(f); err != nil {
		return nil, err
	}
	// SIGKILL the driver container in place (crictl stop with timeout 0),
	// as if the process had crashed; the kubelet restarts it in the same
	// pod. (kill 1 through kubectl exec would not do: PID 1 of a container
	// ignores SIGKILL sent from inside, and SIGTERM is a clean stop.)
	script := fmt.Sprintf("crictl stop --timeout 0 $(crictl ps --quiet --name '^%s$' --label io.kubernetes.pod.namespace=%s)", deploy.PluginContainer, deploy.Namespace)
	return []Action{k.docker("exec", f.Node, "sh", "-c", script)}, nil
}

// nodeName matches the node containers of cluster c: c-control-plane,
// c-control-plane2, ..., c-worker, c-worker2, ...
func (k *Kind) nodeName() *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(k.Config.Cluster) + `-(control-plane|worker)([1-9][0-9]*)?$`)
}

// checkNode accepts the nodes of this kind cluster only: a docker action
// on any other container could hit something that is not ours.
func (k *Kind) checkNode(f fault.Fault) error {
	if !k.nodeName().MatchString(f.Node) {
		return fmt.Errorf("fault %s: %q is not a node of kind cluster %q (its nodes are %s-control-plane, %s-worker, %s-worker2, ...)",
			f.Kind, f.Node, k.Config.Cluster, k.Config.Cluster, k.Config.Cluster, k.Config.Cluster)
	}
	return nil
}

// checkWorker is checkNode for faults that stop a node: the control plane
// takes the API server with it, and then nothing can observe the fault.
func (k *Kind) checkWorker(f fault.Fault) error {
	if err := k.checkNode(f); err != nil {
		return err
	}
	if m := k.nodeName().FindStringSubmatch(f.Node); m[1] == "control-plane" {
		return fmt.Errorf("fault %s: %s is a control-plane node; stopping it stops the API server, so pick a worker", f.Kind, f.Node)
	}
	return nil
}

func (k *Kind) docker(args ...string) Command {
	bin := k.Config.Docker
	if bin == "" {
		bin = DefaultDocker
	}
	return Command{Argv: append([]string{bin}, args...)}
}

func ptr[T any](v T) *T { return &v }

// Execute performs actions in order; see Executor.
func (k *Kind) Execute(ctx context.Context, actions []Action) error {
	for i, a := range actions {
		if k.Log != nil {
			fmt.Fprintf(k.Log, "fault: %s\n", a)
		}
		if err := k.execute(ctx, a); err != nil {
			return fmt.Errorf("action %d of %d (%s): %w", i+1, len(actions), a, err)
		}
	}
	return nil
}

func (k *Kind) execute(ctx context.Context, a Action) error {
	if c, ok := a.(Command); ok {
		return k.command(ctx, c)
	}
	if k.Client == nil {
		return errors.New("no Kubernetes client (Kind.Client) for a client-go action")
	}
	switch a := a.(type) {
	case TaintNode:
		return k.updateNode(ctx, a.Node, func(n *corev1.Node) bool { return k.taint(n, a.Taint) })
	case UntaintNode:
		return k.updateNode(ctx, a.Node, func(n *corev1.Node) bool {
			kept := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return t.Key == a.Key && t.Effect == a.Effect })
			if len(kept) == len(n.Spec.Taints) {
				return false
			}
			n.Spec.Taints = kept
			return true
		})
	case DeletePods:
		return k.deletePods(ctx, a)
	case StaleVolumeAttachment:
		return apifaults.StaleVolumeAttachment(ctx, k.Client, a.Namespace, a.Claim, a.Node, nil)
	case WaitNodeReady:
		return k.waitNodeReady(ctx, a)
	}
	return fmt.Errorf("unknown action type %T", a)
}

// command runs a command action with the Runner, its output in the error
// when it fails.
func (k *Kind) command(ctx context.Context, c Command) error {
	runner := k.Runner
	if runner == nil {
		runner = ExecRunner{}
	}
	out, err := runner.Run(ctx, c.Argv)
	if err != nil {
		if s := strings.TrimSpace(string(out)); s != "" {
			return fmt.Errorf("%w: %s", err, s)
		}
		return err
	}
	return nil
}

// taint puts t on n, replacing a taint of the same key and effect, with
// the time a NoExecute taint was added as the node lifecycle controller
// stamps it; it reports whether n changed.
func (k *Kind) taint(n *corev1.Node, t corev1.Taint) bool {
	if t.Effect == corev1.TaintEffectNoExecute && t.TimeAdded == nil {
		t.TimeAdded = &metav1.Time{Time: k.now()}
	}
	for i, old := range n.Spec.Taints {
		if old.Key == t.Key && old.Effect == t.Effect {
			if old.Value == t.Value {
				return false
			}
			n.Spec.Taints[i] = t
			return true
		}
	}
	n.Spec.Taints = append(n.Spec.Taints, t)
	return true
}

// deletePods deletes the pods a names; it fails if none matches.
func (k *Kind) deletePods(ctx context.Context, a DeletePods) error {
	opts := metav1.ListOptions{LabelSelector: a.LabelSelector}
	if a.Node != "" {
		opts.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", a.Node).String()
	}
	pods, err := k.Client.CoreV1().Pods(a.Namespace).List(ctx, opts)
	if err != nil {
		return err
	}
	deleted := 0
	for _, pod := range pods.Items {
		if a.Node != "" && pod.Spec.NodeName != a.Node {
			continue // field selectors are the server's business; be sure
		}
		err := k.Client.CoreV1().Pods(a.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: a.GracePeriodSeconds})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		deleted++
	}
	if deleted == 0 {
		return fmt.Errorf("no pod matches %s", a)
	}
	return nil
}

// waitNodeReady polls the node until its Ready condition has a.Status, or
// a.Timeout passes; the error says what was seen last.
func (k *Kind) waitNodeReady(ctx context.Context, a WaitNodeReady) error {
	interval := k.PollInterval
	if interval == 0 {
		interval = 2 * time.Second
	}
	last := "not seen yet"
	err := wait.PollUntilContextTimeout(ctx, interval, a.Timeout, true, func(ctx context.Context) (bool, error) {
		n, err := k.Client.CoreV1().Nodes().Get(ctx, a.Node, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = "no Ready condition"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				last = fmt.Sprintf("Ready=%s (%s)", c.Status, c.Reason)
				return c.Status == a.Status, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%w; last seen: %s", err, last)
	}
	return nil
}

// updateNode applies change to the node and writes it back if change
// reports a difference, retrying on conflicts.
func (k *Kind) updateNode(ctx context.Context, name string, change func(*corev1.Node) bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := k.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !change(n) {
			return nil
		}
		_, err = k.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

func (k *Kind) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}
