//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/csisim/csisim/scenarios"
)

// specTimeout bounds one scenario on the cluster: the longest its steps
// can take (each wait its timeout, each sleep and consistently its
// duration, a few seconds for every other step) and five minutes more.
// One bound for all (it was ten minutes) cut node-loss-force-detach,
// whose waits and sleeps add up to 18 minutes, short in its fifth-minute
// sleep, and the stopped worker it left failed the specs after it.
func specTimeout(sc *scenarios.Scenario) time.Duration {
	total := 5 * time.Minute
	for _, st := range append(append([]scenarios.Step(nil), sc.Steps...), sc.Finally...) {
		switch {
		case st.Wait != nil && st.Wait.Timeout > 0:
			total += st.Wait.Timeout
		case st.Wait != nil:
			total += scenarios.DefaultWaitTimeout
		case st.Sleep != nil:
			total += st.Sleep.Duration
		case st.Consistently != nil:
			total += st.Consistently.For
		default:
			total += 5 * time.Second
		}
	}
	return max(total, 10*time.Minute)
}

// stateKinds are the cluster-scoped objects a scenario may make and must
// remove: what is left of them outlives its namespace.
var stateKinds = []schema.GroupVersionResource{
	{Version: "v1", Resource: "nodes"},
	{Version: "v1", Resource: "persistentvolumes"},
	{Version: "v1", Resource: "namespaces"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "csidrivers"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattachments"},
	{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotclasses"},
	{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotcontents"},
}

// remade are the kinds whose objects the cleanup makes again when a
// scenario deleted them and did not put them back: the deployed driver's
// CSIDriver and classes, without which every spec after fails.
var remade = []string{"storageclasses", "csidrivers", "volumesnapshotclasses"}

// clusterObject is a cluster-scoped object of stateKinds as a spec found
// it.
type clusterObject struct {
	gvr schema.GroupVersionResource
	obj unstructured.Unstructured
}

// line is its kind and name, and for a node its taints and whether it is
// cordoned (what a scenario changes on the nodes it borrows).
func (o clusterObject) line() string {
	line := o.gvr.Resource + "/" + o.obj.GetName()
	if o.gvr.Resource == "nodes" {
		spec, _ := o.obj.Object["spec"].(map[string]any)
		line += fmt.Sprintf(" taints=%v unschedulable=%v", spec["taints"], spec["unschedulable"])
	}
	return line
}

// clusterSnapshot is every object of stateKinds, by kind/name.
type clusterSnapshot map[string]clusterObject

func snapshotCluster(b scenarios.Backend) (clusterSnapshot, error) {
	client, err := dynamic.NewForConfig(b.RESTConfig())
	if err != nil {
		return nil, err
	}
	snap := clusterSnapshot{}
	for _, gvr := range stateKinds {
		list, err := client.Resource(gvr).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", gvr.Resource, err)
		}
		for _, o := range list.Items {
			snap[gvr.Resource+"/"+o.GetName()] = clusterObject{gvr: gvr, obj: o}
		}
	}
	return snap, nil
}

// lines is one line per object (clusterObject.line), sorted.
func (s clusterSnapshot) lines() []string {
	var state []string
	for _, o := range s {
		state = append(state, o.line())
	}
	sort.Strings(state)
	return state
}

// leftBehindTimeout bounds the wait for what a scenario made to go once
// it ended: its claims' volumes are deleted after the claims.
const leftBehindTimeout = 3 * time.Minute

// leftBehind is how the cluster differs from before, once what the
// scenario made had leftBehindTimeout to go; nil when it does not. What
// differs is then put back (cleanUp), whether the scenario passed or
// failed: a volume a failed spec left would fail the next spec's count
// of volumes too.
func leftBehind(before clusterSnapshot) []string {
	deadline := time.Now().Add(leftBehindTimeout)
	for {
		after, err := snapshotCluster(backend)
		if err != nil {
			return []string{err.Error()}
		}
		d := diffState(before.lines(), after.lines())
		if len(d) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			cleanUp(before, after)
			return d
		}
		time.Sleep(2 * time.Second)
	}
}

// cleanUpTimeout bounds putting back what a scenario left.
const cleanUpTimeout = 2 * time.Minute

// cleanUp puts the cluster back as before from after: deletes what is
// new (its finalizers taken off if it has not gone within a minute: the
// driver or node that would have finished them may be what the scenario
// broke), makes again the classes and CSIDriver it deleted, and writes
// back the taints and cordon of the nodes it changed. It reports to the
// spec's output what it did and could not do; the spec fails all the
// same (leftBehind's caller).
func cleanUp(before, after clusterSnapshot) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanUpTimeout)
	defer cancel()
	client, err := dynamic.NewForConfig(backend.RESTConfig())
	if err != nil {
		fmt.Fprintf(GinkgoWriter, "clean up: %v\n", err)
		return
	}
	var made []string
	for key, o := range after {
		b, ok := before[key]
		switch {
		case !ok:
			made = append(made, key)
			err = deleteObject(ctx, client, o)
		case o.gvr.Resource == "nodes" && b.line() != o.line():
			err = restoreNode(ctx, client, b)
		default:
			continue
		}
		logCleanUp(key, err)
	}
	for key, b := range before {
		if _, ok := after[key]; !ok && slices.Contains(remade, b.gvr.Resource) {
			logCleanUp(key, remake(ctx, client, b))
		}
	}
	waitGoneOrUnblock(ctx, client, after, made)
}

func logCleanUp(key string, err error) {
	if err != nil {
		fmt.Fprintf(GinkgoWriter, "clean up: %s: %v\n", key, err)
		return
	}
	fmt.Fprintf(GinkgoWriter, "clean up: put back %s\n", key)
}

func deleteObject(ctx context.Context, client dynamic.Interface, o clusterObject) error {
	err := client.Resource(o.gvr).Delete(ctx, o.obj.GetName(), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

// restoreNode writes back the node's taints and cordon as b had them.
func restoreNode(ctx context.Context, client dynamic.Interface, b clusterObject) error {
	spec, _ := b.obj.Object["spec"].(map[string]any)
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"taints": spec["taints"], "unschedulable": spec["unschedulable"]}})
	if err != nil {
		return err
	}
	if _, err := client.Resource(b.gvr).Patch(ctx, b.obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("write back its taints and cordon: %w", err)
	}
	return nil
}

// remake creates b again as it was, without what the API server sets.
func remake(ctx context.Context, client dynamic.Interface, b clusterObject) error {
	o := b.obj.DeepCopy()
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields", "generation", "deletionTimestamp"} {
		unstructured.RemoveNestedField(o.Object, "metadata", f)
	}
	if _, err := client.Resource(b.gvr).Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("make again: %w", err)
	}
	return nil
}

// waitGoneOrUnblock waits up to a minute for the objects of keys to go,
// then takes the finalizers off those still there.
func waitGoneOrUnblock(ctx context.Context, client dynamic.Interface, after clusterSnapshot, keys []string) {
	deadline := time.Now().Add(time.Minute)
	for len(keys) > 0 {
		keys = slices.DeleteFunc(keys, func(key string) bool {
			o := after[key]
			_, err := client.Resource(o.gvr).Get(ctx, o.obj.GetName(), metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		if len(keys) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(2 * time.Second)
	}
	for _, key := range keys {
		o := after[key]
		_, err := client.Resource(o.gvr).Patch(ctx, o.obj.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			fmt.Fprintf(GinkgoWriter, "clean up: %s did not go, and its finalizers stay: %v\n", key, err)
			continue
		}
		fmt.Fprintf(GinkgoWriter, "clean up: %s did not go within a minute: its finalizers taken off\n", key)
	}
}

// diffState lists what after has that before had not (+) and the reverse
// (-).
func diffState(before, after []string) []string {
	var d []string
	for _, a := range after {
		if !slices.Contains(before, a) {
			d = append(d, "+ "+a)
		}
	}
	for _, b := range before {
		if !slices.Contains(after, b) {
			d = append(d, "- "+b)
		}
	}
	return d
}
