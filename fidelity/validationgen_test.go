package fidelity

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The generator of TestValidationAgainstTheRealServer's cases: for each
// kind fakekube serves, a valid object (varied by the generator) and the
// mutations that may make it invalid — on create, on an update of the
// main resource (immutable fields among them), on an update of its status.

const (
	opCreate = "create"
	opUpdate = "update"
	opStatus = "status"
)

// kind is one kind under test.
type kind struct {
	name       string
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	empty      func() runtime.Object
	// valid returns a valid object named from name (a kind whose names
	// are special makes its own of it).
	valid func(r *rand.Rand, name string) runtime.Object
	// create, update and status are the kind's own mutations for each
	// operation; status is empty for a kind without a status subresource.
	create, update, status []mutation
}

// mutation changes an object. Its randomness comes from the seed it is
// given, so an update applies the same change on both servers.
type mutation struct {
	name  string
	apply func(seed uint64, obj runtime.Object)
}

// mut is a mutation of objects of type T.
func mut[T runtime.Object](name string, f func(r *rand.Rand, o T)) mutation {
	return mutation{name: name, apply: func(seed uint64, obj runtime.Object) {
		f(rand.New(rand.NewPCG(seed, 1)), obj.(T))
	}}
}

// metaMut is a mutation of any object's metadata.
func metaMut(name string, f func(r *rand.Rand, m metav1.Object)) mutation {
	return mutation{name: name, apply: func(seed uint64, obj runtime.Object) {
		m, err := meta.Accessor(obj)
		if err != nil {
			panic(err)
		}
		f(rand.New(rand.NewPCG(seed, 1)), m)
	}}
}

// testCase is one request, or a create and then an update.
type testCase struct {
	op   string
	kind *kind
	// object is what a create sends.
	object runtime.Object
	// base is what an update case creates first; update changes it.
	base      runtime.Object
	update    func(runtime.Object)
	mutations []string
}

func (c testCase) name() string {
	m, _ := meta.Accessor(c.base)
	return m.GetName()
}

// generateCase makes case i: every kind in turn; a create (with no, one
// or two mutations), or the update of a valid object's main resource or
// status (with one or two mutations).
func generateCase(r *rand.Rand, i int) testCase {
	k := allKinds[i%len(allKinds)]
	name := fmt.Sprintf("v%d-%s", i, strings.ToLower(k.kind))
	c := testCase{op: opCreate, kind: k}
	var pool []mutation
	switch p := r.IntN(100); {
	case p < 25 && len(k.update) > 0:
		c.op, pool = opUpdate, append(k.update, metaUpdates...)
	case p < 40 && len(k.status) > 0:
		c.op, pool = opStatus, k.status
	default:
		pool = append(k.create, metaCreates...)
	}
	obj := k.valid(r, name)
	n := 0
	switch p := r.IntN(100); {
	case c.op == opCreate && p < 20:
	case p < 75:
		n = 1
	default:
		n = 2
	}
	var chosen []mutation
	var seeds []uint64
	for range n {
		m := pool[r.IntN(len(pool))]
		chosen = append(chosen, m)
		seeds = append(seeds, r.Uint64())
	}
	if c.op == opCreate {
		for j, m := range chosen {
			if applied(m, seeds[j], obj) {
				c.mutations = append(c.mutations, m.name)
			}
		}
		c.object = obj
		return c
	}
	for _, m := range chosen {
		c.mutations = append(c.mutations, m.name)
	}
	c.base = obj
	c.update = func(o runtime.Object) {
		for j, m := range chosen {
			applied(m, seeds[j], o)
		}
	}
	return c
}

// applied applies m, unless it does not fit what an earlier mutation left
// (a container's mount after the containers went): it then changes
// nothing, and says so.
func applied(m mutation, seed uint64, obj runtime.Object) (ok bool) {
	probe := obj.DeepCopyObject()
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	m.apply(seed, probe)
	m.apply(seed, obj)
	return true
}

// allKinds are the kinds fakekube serves.
var allKinds = append(append(append([]*kind{}, coreKinds...), storageKinds...), otherKinds...)

func pick[T any](r *rand.Rand, values ...T) T { return values[r.IntN(len(values))] }

// badNames are names the real server refuses for most kinds, each for
// its own reason.
var badNames = []string{"Upper", "under_score", "-dash", "dot.", strings.Repeat("n", 254), "a..b", "sp ace", "",
	"x/y", strings.Repeat("l", 64)}

// badLabelKeys and badLabelValues break the rules of label keys and values.
var (
	badLabelKeys   = []string{"-tier", "tier/", "a/b/c", "Bad Key", strings.Repeat("k", 64), "UPPER.example.com/x", "example.com/" + strings.Repeat("k", 64), ""}
	badLabelValues = []string{"bad value", "-lead", "trail-", strings.Repeat("v", 64), "a/b"}
)

// metaCreates change the metadata of an object to create.
var metaCreates = []mutation{
	metaMut("name", func(r *rand.Rand, m metav1.Object) {
		m.SetName(pick(r, badNames...))
	}),
	metaMut("generateName", func(r *rand.Rand, m metav1.Object) {
		m.SetGenerateName(pick(r, m.GetName()+"-", "Bad-", "x_"))
		m.SetName("")
	}),
	metaMut("label key", func(r *rand.Rand, m metav1.Object) {
		m.SetLabels(map[string]string{pick(r, badLabelKeys...): "v"})
	}),
	metaMut("label value", func(r *rand.Rand, m metav1.Object) {
		m.SetLabels(map[string]string{"app": pick(r, badLabelValues...)})
	}),
	metaMut("valid labels", func(r *rand.Rand, m metav1.Object) {
		m.SetLabels(map[string]string{"example.com/tier": "gold", "app": "db-" + fmt.Sprint(r.IntN(9))})
	}),
	metaMut("annotation key", func(r *rand.Rand, m metav1.Object) {
		m.SetAnnotations(map[string]string{pick(r, badLabelKeys...): "v"})
	}),
	metaMut("annotations too large", func(r *rand.Rand, m metav1.Object) {
		m.SetAnnotations(map[string]string{"big": strings.Repeat("a", 256*1024)})
	}),
	metaMut("finalizer", func(r *rand.Rand, m metav1.Object) {
		m.SetFinalizers([]string{pick(r, "Bad Finalizer", "example.com/ok", "unqualified", "a/b/c", "kubernetes.io/pvc-protection")})
	}),
	metaMut("owner reference", func(r *rand.Rand, m metav1.Object) {
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "6d3b8f3c-2f64-4bb4-9f62-4b4b7a7f6a10"}
		switch r.IntN(4) {
		case 0:
			ref.UID = ""
		case 1:
			ref.APIVersion = ""
		case 2:
			ref.Name = ""
		}
		m.SetOwnerReferences([]metav1.OwnerReference{ref})
	}),
	metaMut("namespace", func(r *rand.Rand, m metav1.Object) {
		m.SetNamespace(pick(r, "other", "Bad_NS"))
	}),
}

// metaUpdates change the metadata of a stored object.
var metaUpdates = []mutation{
	metaMut("label key", func(r *rand.Rand, m metav1.Object) {
		m.SetLabels(map[string]string{pick(r, badLabelKeys...): "v"})
	}),
	metaMut("valid labels", func(r *rand.Rand, m metav1.Object) {
		m.SetLabels(map[string]string{"example.com/tier": "silver"})
	}),
	metaMut("annotations", func(r *rand.Rand, m metav1.Object) {
		m.SetAnnotations(map[string]string{pick(r, "example.com/note", "Bad Key"): "changed"})
	}),
	metaMut("uid", func(r *rand.Rand, m metav1.Object) {
		m.SetUID("0f0e0d0c-0b0a-4908-8706-050403020100")
	}),
	metaMut("generateName", func(r *rand.Rand, m metav1.Object) {
		m.SetGenerateName("changed-")
	}),
	metaMut("finalizer", func(r *rand.Rand, m metav1.Object) {
		m.SetFinalizers(append(m.GetFinalizers(), pick(r, "example.com/hold", "Bad Finalizer")))
	}),
}
