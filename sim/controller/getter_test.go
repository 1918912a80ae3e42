package controller

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestGetter(t *testing.T) {
	broken := errors.New("lister broken")
	get := Getter[*appsv1.ReplicaSet](func(ns, name string) (*appsv1.ReplicaSet, error) {
		switch name {
		case "there":
			return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "uid-1"}}, nil
		case "gone":
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, name)
		}
		return nil, broken
	})
	for _, tc := range []struct {
		key     string
		ok      bool
		wantErr bool
	}{{"ns/there", true, false}, {"ns/gone", false, false}, {"ns/other", false, true}, {"a/b/c", false, true}} {
		obj, ok, err := get.Lookup(tc.key)
		if ok != tc.ok || (err != nil) != tc.wantErr || ok && obj.Name != "there" {
			t.Errorf("Lookup(%q) = %v, %v, %v; want ok %v, error %v", tc.key, obj, ok, err, tc.ok, tc.wantErr)
		}
	}
	if uid, err := get.UID("ns", "there"); uid != "uid-1" || err != nil {
		t.Errorf("UID = %q, %v", uid, err)
	}
	if _, err := get.UID("ns", "gone"); !apierrors.IsNotFound(err) {
		t.Errorf("UID of a gone object: %v, want NotFound", err)
	}
}
