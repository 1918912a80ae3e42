package controller

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

func TestEnqueueControllerHandler(t *testing.T) {
	setKind := appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	owners := map[string]types.UID{"default/web": "uid-web"}
	uid := func(ns, name string) (types.UID, error) {
		if u, ok := owners[ns+"/"+name]; ok {
			return u, nil
		}
		return "", errors.New("not found")
	}
	ref := func(kind, name string, u types.UID, controller bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: u, Controller: &controller}}
	}
	pod := func(refs []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0", OwnerReferences: refs}}
	}
	for _, tc := range []struct {
		name string
		obj  any
		want int
	}{
		{"controlled by the set", pod(ref("StatefulSet", "web", "uid-web", true)), 1},
		{"a deleted pod's tombstone", cache.DeletedFinalStateUnknown{Key: "default/web-0", Obj: pod(ref("StatefulSet", "web", "uid-web", true))}, 1},
		{"owner, not controller", pod(ref("StatefulSet", "web", "uid-web", false)), 0},
		{"another kind", pod(ref("ReplicaSet", "web", "uid-web", true)), 0},
		{"a set of that name with another UID", pod(ref("StatefulSet", "web", "uid-old", true)), 0},
		{"no such set", pod(ref("StatefulSet", "db", "uid-db", true)), 0},
		{"no owner", pod(nil), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewQueue("test")
			defer q.ShutDown()
			EnqueueControllerHandler(q, setKind, uid).OnDelete(tc.obj)
			if q.Len() != tc.want {
				t.Fatalf("queued %d keys, want %d", q.Len(), tc.want)
			}
			if tc.want == 1 {
				if key, _ := q.Get(); key != "default/web" {
					t.Errorf("queued %q, want default/web", key)
				}
			}
		})
	}
}
