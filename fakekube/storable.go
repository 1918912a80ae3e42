package fakekube

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// etcdMaxRequestBytes is etcd's default --max-request-bytes (1.5 MiB),
// the most one write to it may carry; the real server's etcd refuses a
// larger one and the API server passes its words on, 500 without a
// reason.
const etcdMaxRequestBytes = 3 << 19

// etcdRequestOverhead estimates what a write adds to the stored value:
// the storage envelope (the "k8s\x00" prefix and the runtime.Unknown
// around the protobuf) and the transaction around the put.
const etcdRequestOverhead = 128

// checkStorable refuses an object the real server's etcd would refuse as
// too large. It measures the object's protobuf encoding, as the server
// stores built-in kinds; kinds without one (custom resources) are not
// measured. Near the limit the estimate may be off by a few bytes.
func checkStorable(res *resource, obj runtime.Object) error {
	sized, ok := obj.(interface{ Size() int })
	if !ok {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	key := etcdKey(res, m.GetNamespace(), m.GetName())
	if sized.Size()+len(key)+etcdRequestOverhead <= etcdMaxRequestBytes {
		return nil
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
		Code: http.StatusInternalServerError, Message: "etcdserver: request is too large"}}
}

// etcdKey is where the real server keeps an object in etcd: under
// /registry/, the resource (a custom resource's under its group first;
// Nodes under their old name, minions: kubernetes
// pkg/kubeapiserver/default_storage_factory_builder.go, SpecialDefaultResourcePrefixes), then the namespace, if any,
// and the name.
func etcdKey(res *resource, namespace, name string) string {
	key := "/registry/"
	if res.crd {
		key += res.gvr.Group + "/"
	}
	if res.gvr == coreV1.WithResource("nodes") {
		key += "minions/"
	} else {
		key += res.gvr.Resource + "/"
	}
	if namespace != "" {
		key += namespace + "/"
	}
	return key + name
}

// preconditionFailed is the real server's conflict for a write whose
// precondition does not hold: its etcd storage's error, whose words name
// the key (k8s.io/apiserver pkg/storage/errors.go, NewInvalidObjError).
func preconditionFailed(res *resource, namespace, name, what string, want, have any) error {
	return apierrors.NewConflict(res.groupResource(), name, fmt.Errorf(
		"StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: %s in precondition: %v, %s in object meta: %v",
		etcdKey(res, namespace, name), what, want, what, have))
}
