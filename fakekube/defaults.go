package fakekube

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

// defaultObject fills in what kube-apiserver's decoding of a body fills in:
// the v1 defaulters of the built-in kinds (k8s.io/kubernetes
// pkg/apis/<group>/v1/defaults.go, registered in legacyscheme by the
// install packages strategy.go imports). The snapshot CRDs' schemas
// declare no defaults.
func defaultObject(res *resource, obj runtime.Object) {
	if !res.crd {
		legacyscheme.Scheme.Default(obj)
	}
}
