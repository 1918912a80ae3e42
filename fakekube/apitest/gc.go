package apitest

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// dependent is a ConfigMap owned by owner, optionally held by a finalizer.
func dependent(ns, name string, owner *corev1.ConfigMap, finalizers ...string) *corev1.ConfigMap {
	cm := configMap(ns, name)
	cm.Finalizers = finalizers
	cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}
	return cm
}

func ownerGoneDeletesDependents(t *testing.T, e *env) {
	// A CSINode owned by its Node, as the kubelet makes it.
	nodeName := e.name("node")
	node, err := e.cs.CoreV1().Nodes().Create(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.cs.CoreV1().Nodes().Delete(e.ctx, nodeName, metav1.DeleteOptions{}) })
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: nodeName,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: node.UID}}}}
	if _, err := e.cs.StorageV1().CSINodes().Create(e.ctx, csiNode, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.cs.CoreV1().Nodes().Delete(e.ctx, nodeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(t, "the CSINode of a deleted Node is collected", func() error {
		_, err := e.cs.StorageV1().CSINodes().Get(e.ctx, nodeName, metav1.GetOptions{})
		return gone(err)
	})
}

func foregroundDeletion(t *testing.T, e *env) {
	cms := e.cs.CoreV1().ConfigMaps(e.ns)
	owner, err := cms.Create(e.ctx, configMap(e.ns, "owner"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(e.ctx, dependent(e.ns, "dep", owner, "example.com/hold"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fg := metav1.DeletePropagationForeground
	if err := cms.Delete(e.ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	held, err := cms.Get(e.ctx, "owner", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the owner went before its dependent: %v", err)
	}
	if held.DeletionTimestamp == nil || !slices.Contains(held.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Fatalf("owner: deletionTimestamp %v finalizers %v, want set and foregroundDeletion", held.DeletionTimestamp, held.Finalizers)
	}
	e.eventually(t, "the dependent is being deleted", func() error {
		dep, err := cms.Get(e.ctx, "dep", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if dep.DeletionTimestamp == nil {
			return fmt.Errorf("no deletionTimestamp yet")
		}
		return nil
	})
	dep, err := cms.Get(e.ctx, "dep", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep.Finalizers = nil
	if _, err := cms.Update(e.ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(t, "the owner goes after its last dependent", func() error {
		_, err := cms.Get(e.ctx, "owner", metav1.GetOptions{})
		return gone(err)
	})
}

func orphanDeletion(t *testing.T, e *env) {
	cms := e.cs.CoreV1().ConfigMaps(e.ns)
	owner, err := cms.Create(e.ctx, configMap(e.ns, "owner"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(e.ctx, dependent(e.ns, "dep", owner), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	orphan := metav1.DeletePropagationOrphan
	if err := cms.Delete(e.ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	e.eventually(t, "the owner goes", func() error {
		_, err := cms.Get(e.ctx, "owner", metav1.GetOptions{})
		return gone(err)
	})
	e.eventually(t, "the orphan loses its owner reference and stays", func() error {
		dep, err := cms.Get(e.ctx, "dep", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(dep.OwnerReferences) != 0 {
			return fmt.Errorf("owner references %v", dep.OwnerReferences)
		}
		return nil
	})
	if err := cms.Delete(e.ctx, "unknown-policy", metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletionPropagation("Sideways"))}); err == nil {
		t.Error("an unknown propagation policy was accepted")
	}
}

func namespaceDeletion(t *testing.T, e *env) {
	nsName := e.name("apitest-ns")
	nss := e.cs.CoreV1().Namespaces()
	if _, err := nss.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := e.cs.CoreV1().ConfigMaps(nsName)
	held := configMap(nsName, "held")
	held.Finalizers = []string{"example.com/hold"}
	if _, err := cms.Create(e.ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(e.ctx, nsName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := nss.Get(e.ctx, nsName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a namespace holding an object went at once: %v", err)
	}
	if ns.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("phase %s, want Terminating", ns.Status.Phase)
	}
	_, err = cms.Create(e.ctx, configMap(nsName, "late"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("create in a terminating namespace: %v, want Forbidden", err)
	}
	e.eventually(t, "the namespace's content is being deleted", func() error {
		cm, err := cms.Get(e.ctx, "held", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.DeletionTimestamp == nil {
			return fmt.Errorf("no deletionTimestamp yet")
		}
		cm.Finalizers = nil
		_, err = cms.Update(e.ctx, cm, metav1.UpdateOptions{})
		return err
	})
	e.eventually(t, "the emptied namespace goes", func() error {
		_, err := nss.Get(e.ctx, nsName, metav1.GetOptions{})
		return gone(err)
	})
}
