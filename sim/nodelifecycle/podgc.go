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

// CollectOrphans is the pod garbage collector's pass over orphaned pods:
// pods bound to a Node that no longer exists. A missing node is first put
// in quarantine; when it is still missing 40 s later (checked with the API
// server, not only the cache), its pods are marked Failed with the
// DisruptionTarget condition and force-deleted, as when a cloud provider
// removed the Node of a machine that is gone. Run it every PodGCPeriod.
func (c *Controller) CollectOrphans(ctx context.Context) {
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
		if _, err := c.client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			deleted[n] = true
		}
	}
	for _, pod := range pods {
		if !deleted[pod.Spec.NodeName] {
			continue
		}
		if err := c.failAndDelete(ctx, pod); err != nil {
			utilruntime.HandleError(err) // as the real collector: logged, tried again next period
		}
	}
}

// failAndDelete marks the pod Failed with the DisruptionTarget condition
// PodGC sets (its kubelet is gone and would never do it) and deletes it
// with grace period 0.
func (c *Controller) failAndDelete(ctx context.Context, pod *corev1.Pod) error {
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByPodGC",
			Message: "PodGC: node no longer exists", LastTransitionTime: metav1.NewTime(c.clock.Now()).Rfc3339Copy()}
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"phase": corev1.PodFailed, "conditions": []corev1.PodCondition{cond}}})
		if err != nil {
			return err
		}
		_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("marking orphaned pod %s/%s Failed: %w", pod.Namespace, pod.Name, err)
		}
	}
	zero := int64(0)
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting orphaned pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
