// Package apitest checks the API-server semantics that controllers rely on,
// through client-go and plain HTTP only, so that the same checks run against
// fakekube and against a real kube-apiserver: what passes on both is
// faithful. Every check works in a namespace of its own and waits (polls)
// for what a real control plane does asynchronously (garbage collection,
// namespace deletion), which fakekube does at once.
package apitest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Target is an API server to check.
type Target struct {
	// Config reaches the server.
	Config *rest.Config
	// Timeout bounds every wait for asynchronous work; default 60 s.
	Timeout time.Duration
	// SnapshotCRDs says whether the snapshot.storage.k8s.io kinds are served.
	SnapshotCRDs bool
}

// check is one named semantic check.
type check struct {
	name string
	run  func(t *testing.T, e *env)
}

// Run runs every check against the target, each as a subtest.
func Run(t *testing.T, target Target) {
	if target.Timeout == 0 {
		target.Timeout = 60 * time.Second
	}
	for _, c := range checks() {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, newEnv(t, target))
		})
	}
}

func checks() []check {
	return []check{
		{"ResourceVersionAndConflicts", resourceVersionAndConflicts},
		{"NoOpUpdateIsNotAWrite", noOpUpdateIsNotAWrite},
		{"ClaimAdmissionAndDefaults", claimAdmissionAndDefaults},
		{"FinalizersHoldDeletion", finalizersHoldDeletion},
		{"StatusSubresource", statusSubresource},
		{"PodBindingAndGracefulDeletion", podBindingAndGracefulDeletion},
		{"PatchTypes", patchTypes},
		{"ImmutableFields", immutableFields},
		{"ValidationErrors", validationErrors},
		{"SelectorsInListAndWatch", selectorsInListAndWatch},
		{"InformerSeesChangesInOrder", informerSeesChangesInOrder},
		{"OwnerGoneDeletesDependents", ownerGoneDeletesDependents},
		{"ForegroundDeletion", foregroundDeletion},
		{"OrphanDeletion", orphanDeletion},
		{"NamespaceDeletion", namespaceDeletion},
		{"BadBodies", badBodies},
		{"SnapshotKinds", snapshotKinds},
		{"ClaimResize", claimResize},
		{"FieldValidation", fieldValidation},
		{"UpdatesAreDefaulted", updatesAreDefaulted},
		{"StorageImmutability", storageImmutability},
		{"SystemNamespacesStay", systemNamespacesStay},
		{"BadQueryParameters", badQueryParameters},
		{"EtcdSizeLimit", etcdSizeLimit},
		{"WorkloadDefaults", workloadDefaults},
		{"TokenRequests", tokenRequests},
	}
}

// env is what a check works with: a client, its own namespace and names
// unique to the check, so checks can share a real cluster.
type env struct {
	target Target
	cs     kubernetes.Interface
	ctx    context.Context
	ns     string
	suffix string
}

func newEnv(t *testing.T, target Target) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*target.Timeout)
	t.Cleanup(cancel)
	cs, err := kubernetes.NewForConfig(target.Config)
	if err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprintf("%06x", rand.IntN(1<<24))
	e := &env{target: target, cs: cs, ctx: ctx, ns: "apitest-" + suffix, suffix: suffix}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", e.ns, err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{})
	})
	return e
}

// name makes a cluster-unique name for a cluster-scoped object.
func (e *env) name(base string) string { return base + "-" + e.suffix }

// eventually polls cond until it returns nil or the target's timeout passes.
func (e *env) eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(e.ctx, 20*time.Millisecond, e.target.Timeout, true, func(context.Context) (bool, error) {
		last = cond()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}

// gone returns nil when get says NotFound.
func gone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		return fmt.Errorf("still there")
	}
	return err
}

func ptr[T any](v T) *T { return &v }
