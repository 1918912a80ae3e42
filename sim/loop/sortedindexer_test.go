package loop

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// names is the names of objs, in their order.
func names(objs []any) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.(*corev1.Pod).Name)
	}
	return out
}

// TestSortedIndexerKeepsListsUntilAChange: a kept list is what a fresh
// sort would give after every kind of change, and a caller that modifies
// the list it got does not modify the next one.
func TestSortedIndexerKeepsListsUntilAChange(t *testing.T) {
	idx := newSortedIndexer()
	if err := idx.AddIndexers(cache.Indexers{"byNode": func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: corev1.PodSpec{NodeName: node}}
	}
	check := func(when string, want ...string) {
		t.Helper()
		for i := 0; i < 2; i++ { // once sorting, once from what is kept
			got := names(idx.List())
			if len(got) != len(want) {
				t.Fatalf("%s: List = %v, want %v", when, got, want)
			}
			for j := range got {
				if got[j] != want[j] {
					t.Fatalf("%s: List = %v, want %v", when, got, want)
				}
			}
		}
	}
	byNode := func(when, node string, want ...string) {
		t.Helper()
		for i := 0; i < 3; i++ { // sorting, kept, kept after the caller's scribble
			objs, err := idx.ByIndex("byNode", node)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(objs); len(got) != len(want) || (len(got) > 0 && got[0] != want[0]) {
				t.Fatalf("%s: ByIndex(%s) = %v, want %v", when, node, got, want)
			}
			if len(objs) > 0 {
				objs[0] = pod("scribbled", node) // the caller's copy
			}
		}
	}
	_ = idx.Add(pod("b", "n1"))
	_ = idx.Add(pod("a", "n2"))
	check("after adds", "a", "b")
	byNode("after adds", "n1", "b")
	l := idx.List()
	l[0] = pod("scribbled", "n1")
	check("after a caller modified its list", "a", "b")
	_ = idx.Add(pod("c", "n1"))
	check("after another add", "a", "b", "c")
	byNode("after another add", "n1", "b", "c")
	_ = idx.Update(pod("b", "n2"))
	byNode("after a move", "n1", "c")
	_ = idx.Delete(pod("a", "n2"))
	check("after a delete", "b", "c")
	_ = idx.Replace([]any{pod("z", "n3")}, "7")
	check("after a replace", "z")
	byNode("after a replace", "n1")
}
