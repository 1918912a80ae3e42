package diff

import (
	"context"
	"fmt"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Workloads are the workload kinds a snapshot shows.
type Workloads struct {
	StatefulSets        []appsv1.StatefulSet
	Deployments         []appsv1.Deployment
	ReplicaSets         []appsv1.ReplicaSet
	ControllerRevisions []appsv1.ControllerRevision
}

// listWorkloads lists the workload kinds.
func listWorkloads(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) (Workloads, error) {
	var w Workloads
	sets, err := cs.AppsV1().StatefulSets("").List(ctx, opts)
	if err != nil {
		return w, fmt.Errorf("listing StatefulSets: %w", err)
	}
	deps, err := cs.AppsV1().Deployments("").List(ctx, opts)
	if err != nil {
		return w, fmt.Errorf("listing Deployments: %w", err)
	}
	rss, err := cs.AppsV1().ReplicaSets("").List(ctx, opts)
	if err != nil {
		return w, fmt.Errorf("listing ReplicaSets: %w", err)
	}
	revs, err := cs.AppsV1().ControllerRevisions("").List(ctx, opts)
	if err != nil {
		return w, fmt.Errorf("listing ControllerRevisions: %w", err)
	}
	return Workloads{StatefulSets: sets.Items, Deployments: deps.Items, ReplicaSets: rss.Items, ControllerRevisions: revs.Items}, nil
}

// learnPodNames gives the pods a ReplicaSet made, named by the API server
// <replicaset>-<random suffix>, a placeholder after their ReplicaSet and
// their place among its pods by creation: "<pod 1 of replicaset ns/name>".
// The ReplicaSet's own name, <deployment>-<pod-template-hash>, stays: both
// clusters compute the same hash from the same template.
func (n *Normaliser) learnPodNames(pods []corev1.Pod) {
	byOwner := map[string][]corev1.Pod{}
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.Kind != "ReplicaSet" || p.GenerateName == "" {
			continue
		}
		key := qualified(p.Namespace, ref.Name)
		byOwner[key] = append(byOwner[key], p)
	}
	for owner, list := range byOwner {
		sort.SliceStable(list, func(i, j int) bool {
			a, b := list[i].CreationTimestamp, list[j].CreationTimestamp
			if !a.Equal(&b) {
				return a.Before(&b)
			}
			return list[i].Name < list[j].Name
		})
		// Numbers go on from the pods already named, so that a pod keeps
		// its placeholder once its older siblings are gone.
		next := 1
		for _, p := range list {
			if _, known := n.names[qualified(p.Namespace, p.Name)]; known {
				next++
			}
		}
		for _, p := range list {
			q := qualified(p.Namespace, p.Name)
			if _, known := n.names[q]; known {
				continue
			}
			placeholder := fmt.Sprintf("<pod %d of replicaset %s>", next, owner)
			next++
			n.set(q, placeholder)
			n.set(p.Name, placeholder)
			n.set(string(p.UID), "<uid of "+placeholder[1:])
		}
	}
}

// workloadObjects adds the workload kinds to a snapshot: their replica
// counts, revisions and conditions.
func (n *Normaliser) workloadObjects(add func(Object), w Workloads) {
	system := func(ns string) bool { return slices.Contains(systemNamespaces, ns) }
	for _, s := range w.StatefulSets {
		if system(s.Namespace) {
			continue
		}
		o := n.object("StatefulSet", s.ObjectMeta)
		if s.Spec.Replicas != nil {
			o.Fields["replicas"] = fmt.Sprint(*s.Spec.Replicas)
		}
		st := s.Status
		o.Fields["status"] = fmt.Sprintf("replicas=%d ready=%d current=%d updated=%d available=%d",
			st.Replicas, st.ReadyReplicas, st.CurrentReplicas, st.UpdatedReplicas, st.AvailableReplicas)
		setField(o.Fields, "currentRevision", st.CurrentRevision)
		setField(o.Fields, "updateRevision", st.UpdateRevision)
		add(o)
	}
	for _, d := range w.Deployments {
		if system(d.Namespace) {
			continue
		}
		o := n.object("Deployment", d.ObjectMeta)
		if d.Spec.Replicas != nil {
			o.Fields["replicas"] = fmt.Sprint(*d.Spec.Replicas)
		}
		setField(o.Fields, "strategy", string(d.Spec.Strategy.Type))
		st := d.Status
		o.Fields["status"] = fmt.Sprintf("replicas=%d updated=%d ready=%d available=%d unavailable=%d",
			st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, st.UnavailableReplicas)
		for _, c := range st.Conditions {
			o.setCondition(string(c.Type), string(c.Status), c.Reason, n.value(c.Message))
		}
		add(o)
	}
	for _, rs := range w.ReplicaSets {
		if system(rs.Namespace) {
			continue
		}
		o := n.object("ReplicaSet", rs.ObjectMeta)
		if rs.Spec.Replicas != nil {
			o.Fields["replicas"] = fmt.Sprint(*rs.Spec.Replicas)
		}
		st := rs.Status
		o.Fields["status"] = fmt.Sprintf("replicas=%d ready=%d available=%d", st.Replicas, st.ReadyReplicas, st.AvailableReplicas)
		add(o)
	}
	for _, r := range w.ControllerRevisions {
		if system(r.Namespace) {
			continue
		}
		o := n.object("ControllerRevision", r.ObjectMeta)
		o.Fields["revision"] = fmt.Sprint(r.Revision)
		add(o)
	}
}
