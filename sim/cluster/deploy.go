package cluster

// The driver's own deployment (Config.Deploy, csisim run --deploy): its
// manifests are applied as `kubectl apply -f` would on a fresh cluster, and
// the node plugin follows the node DaemonSet (or StatefulSet): on each node
// the driver is registered with the kubelet only while the workload's pod
// there is Running and its registrar's flags let the kubelet reach the
// driver (manifests.Unregistered), as node-driver-registrar in that pod
// registers it through the kubelet's plugin watcher and its registration
// goes when the pod does. The sidecar containers' flags configure the
// simulated sidecars (sidecarflags.go).

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/csisim/csisim/drivers/manifests"
	"github.com/csisim/csisim/sim/controller"
)

// pluginWatcherComponent is the component that keeps each node's
// registration of the first driver in step with the node DaemonSet's pods.
const pluginWatcherComponent = "plugin-watcher"

// applyDeploy creates the deployment's objects in order. An object of a
// kind the API server does not serve (RBAC, for one) is left out and named
// in NotApplied; one that exists already is left as it is.
func (c *Cluster) applyDeploy(ctx context.Context) error {
	cfg := c.api.RESTConfig(harnessActor)
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	for _, o := range c.cfg.Deploy.Objects {
		gvk := o.Obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			c.deployNotApplied = append(c.deployNotApplied, fmt.Sprintf("%s %s (%s): not applied, csisim's API server does not serve %s",
				o.Obj.GetKind(), o.Obj.GetName(), o.Source, gvk.GroupVersion().WithKind(gvk.Kind)))
			continue
		}
		var r dynamic.ResourceInterface = client.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ns := o.Obj.GetNamespace()
			if ns == "" {
				ns = metav1.NamespaceDefault
			}
			r = client.Resource(m.Resource).Namespace(ns)
		}
		if _, err := r.Create(ctx, o.Obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("deploy %s: creating %s %s: %w", o.Source, o.Obj.GetKind(), o.Obj.GetName(), err)
		}
	}
	return nil
}

// DeployNotApplied names the objects of the deployment the cluster did not
// apply, and why.
func (c *Cluster) DeployNotApplied() []string { return c.deployNotApplied }

// pluginWatcher registers the first driver on a node while the node
// DaemonSet's pod there is Running, and unregisters it when it no longer
// is.
type pluginWatcher struct {
	c         *Cluster
	namespace string
	// kind and name are the node plugin's workload: a DaemonSet, or a
	// StatefulSet (csi-driver-host-path's).
	kind, name string
	pods       corelisters.PodLister
	queue      controller.Queue
	// registered is, by node, the pod whose plugin is registered there.
	registered map[string]types.UID
}

// startPluginWatcher runs the plugin watcher in the loop, keyed by node.
func (c *Cluster) startPluginWatcher() error {
	np := c.cfg.Deploy.Node
	w := &pluginWatcher{c: c, namespace: np.Namespace, kind: np.Kind, name: np.Name, registered: map[string]types.UID{},
		queue: c.rt.NewQueue(pluginWatcherComponent)}
	client := c.clients.client(pluginWatcherComponent)
	f, err := c.clients.informers(pluginWatcherComponent, client, []informerKind{
		{&corev1.Pod{}, corev1.SchemeGroupVersion.WithResource("pods"), ""}})
	if err != nil {
		return err
	}
	pods := f.Core().V1().Pods()
	w.pods = pods.Lister()
	enqueue := func(obj any) {
		if p, ok := controller.Unwrap(obj).(*corev1.Pod); ok && w.ours(p) && p.Spec.NodeName != "" {
			w.queue.Add(p.Spec.NodeName)
		}
	}
	_, _ = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue})
	c.components.run(pluginWatcherComponent, "kubelet", &process{name: pluginWatcherComponent},
		controller.Component{Workers: []controller.Worker{{Name: pluginWatcherComponent, Queue: w.queue, Sync: w.sync}}})
	return nil
}

// ours: the pod is the node plugin's workload's.
func (w *pluginWatcher) ours(p *corev1.Pod) bool {
	ref := metav1.GetControllerOf(p)
	return p.Namespace == w.namespace && ref != nil && ref.Kind == w.kind && ref.Name == w.name
}

// sync registers or unregisters the driver on node as its DaemonSet pod
// runs or not. A pod that replaced the one whose plugin is registered (a
// rolling update, seen only once both changed) is a new plugin process: the
// old one's socket went with its pod, so the kubelet unregisters the
// driver before the new one registers it, as a real kubelet's plugin
// watcher sees the old socket go before the new one appears.
func (w *pluginWatcher) sync(ctx context.Context, node string) error {
	parts := w.c.nodes[node]
	if parts == nil || parts.kubelet == nil {
		return nil
	}
	pods, err := w.pods.Pods(w.namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	var running types.UID
	for _, p := range pods {
		// A pod whose registrar's flags keep the kubelet from reaching
		// the driver (manifests.Unregistered) never registers it.
		if w.ours(p) && p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil &&
			manifests.Unregistered(&p.Spec, p.Namespace) == "" {
			running = p.UID
		}
	}
	unregister, register := pluginChanges(w.registered[node], running)
	driver := w.c.driver.name()
	if unregister {
		if err := parts.kubelet.UnregisterDriver(ctx, driver); err != nil {
			return err
		}
		delete(w.registered, node)
	}
	if register {
		if err := parts.kubelet.RegisterDriver(ctx, driver, parts.identity); err != nil {
			return err
		}
		w.registered[node] = running
	}
	return nil
}

// pluginChanges says what a node's kubelet does when the DaemonSet pod
// whose plugin it has registered is registered (none: "") and the pod
// running there now is running (none: ""): unregister the old plugin,
// register the new one, or both when one pod replaced the other.
func pluginChanges(registered, running types.UID) (unregister, register bool) {
	if registered == running {
		return false, false
	}
	return registered != "", running != ""
}

// DeployedFrom is the file or directory of the driver's manifests the
// cluster was started with (Config.Deploy), "" for none
// (scenarios.Deployer).
func (c *Cluster) DeployedFrom() string {
	if c.cfg.Deploy == nil {
		return ""
	}
	return c.cfg.Deploy.Path
}
