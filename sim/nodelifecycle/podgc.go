package nodelifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// The pod garbage collector's timing (pkg/controller/podgc): it runs every
// gcCheckPeriod and deletes the pods of a node that has been missing for
// the quarantine time.
const (
	PodGCPeriod          = 20 * time.Second
	orphanQuarantineTime = 40 * time.Second
)

// CollectGarbage is the pod garbage collector's run, every PodGCPeriod:
// terminating pods on nodes out of service, then orphaned pods.
func (c *Controller) CollectGarbage(ctx context.Context) {
	c.collectOutOfService(ctx)
	c.collectOrphans(ctx)
}

// collectOutOfService marks Failed and force-deletes the terminating pods
// of nodes that are not ready and carry the out-of-service taint: the
// non-graceful node shutdown.
func (c *Controller) collectOutOfService(ctx context.Context) {
	pods, _ := c.pods.List(labels.Everything())
	sort.Slice(pods, func(i, j int) bool {
		return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) ||
			pods[i].CreationTimestamp.Equal(&pods[j].CreationTimestamp) && pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name
	})
	for _, pod := range pods {
		if pod.DeletionTimestamp == nil {
			continue
		}
		node, err := c.nodes.Get(pod.Spec.NodeName)
		if err != nil || ready(node) == corev1.ConditionTrue || !hasTaint(node, corev1.TaintNodeOutOfService) {
			continue
		}
		if err := c.failAndDelete(ctx, pod, nil); err != nil {
			utilruntime.HandleError(err)
		}
	}
}

// collectOrphans is the pod garbage collector's pass over orphaned pods:
// pods bound to a Node that no longer exists. A missing node is first put
// in quarantine; when it is still missing 40 s later (checked with the API
// server, not only the cache), its pods are marked Failed with the
// DisruptionTarget condition and force-deleted, as when a cloud provider
// removed the Node of a machine that is gone.
func (c *Controller) collectOrphans(ctx context.Context) {
	nodes, _ := c.nodes.List(labels.Everything())
	existing := map[string]bool{}
	for _, n := range nodes {
		existing[n.Name] = true
	}
	pods, _ := c.pods.List(labels.Everything())
	sort.Slice(pods, func(i, j int) bool {
		return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name
	})
	now := c.clock.Now()
	c.mu.Lock()
	for _, pod := range pods {
		if n := pod.Spec.NodeName; n != "" && !existing[n] {
			if _, ok := c.missingSince[n]; !ok {
				c.missingSince[n] = now
			}
		}
	}
	var due []string
	for n, since := range c.missingSince {
		if !now.Before(since.Add(orphanQuarantineTime)) {
			due = append(due, n)
			delete(c.missingSince, n)
		}
	}
	c.mu.Unlock()
	sort.Strings(due)
	deleted := map[string]bool{}
	for _, n := range due {
		if existing[n] {
			continue
		}
		if _, err := c.podGCClient.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			deleted[n] = true
		}
	}
	for _, pod := range pods {
		if !deleted[pod.Spec.NodeName] {
			continue
		}
		cond := &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByPodGC",
			Message: "PodGC: node no longer exists"}
		if err := c.failAndDelete(ctx, pod, cond); err != nil {
			utilruntime.HandleError(err) // as the real collector: logged, tried again next period
		}
	}
}

// failAndDelete marks the pod Failed, with the condition if there is one
// (its kubelet is gone and would never do it), and deletes it with grace
// period 0, as PodGC does.
func (c *Controller) failAndDelete(ctx context.Context, pod *corev1.Pod, cond *corev1.PodCondition) error {
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		status := map[string]any{"phase": corev1.PodFailed}
		if cond != nil {
			cond.LastTransitionTime = metav1.NewTime(c.clock.Now()).Rfc3339Copy()
			status["conditions"] = []corev1.PodCondition{*cond}
		}
		patch, err := json.Marshal(map[string]any{"status": status})
		if err != nil {
			return err
		}
		_, err = c.podGCClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("marking orphaned pod %s/%s Failed: %w", pod.Namespace, pod.Name, err)
		}
	}
	zero := int64(0)
	err := c.podGCClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting orphaned pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
