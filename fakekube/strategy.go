package fakekube

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/capabilities"

	// The API groups' internal types, v1 defaults and conversions, in
	// legacyscheme.Scheme, as kube-apiserver installs them.
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/events/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"

	"k8s.io/kubernetes/pkg/registry/apps/controllerrevision"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/coordination/lease"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	coreevent "k8s.io/kubernetes/pkg/registry/core/event"
	"k8s.io/kubernetes/pkg/registry/core/namespace"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/serviceaccount"
	"k8s.io/kubernetes/pkg/registry/scheduling/priorityclass"
	"k8s.io/kubernetes/pkg/registry/storage/csidriver"
	"k8s.io/kubernetes/pkg/registry/storage/csinode"
	"k8s.io/kubernetes/pkg/registry/storage/csistoragecapacity"
	"k8s.io/kubernetes/pkg/registry/storage/storageclass"
	"k8s.io/kubernetes/pkg/registry/storage/volumeattachment"
	"k8s.io/kubernetes/pkg/registry/storage/volumeattributesclass"
)

// The pod validation of the strategies reads the process's capabilities:
// kube-apiserver sets them from --allow-privileged in its main
// (cmd/kube-apiserver/app/server.go capabilities.Setup), and every
// cluster a CSI driver is deployed on runs it with true (kubeadm, kind,
// and realkube's kube-apiserver), or no node plugin could be privileged.
func init() { capabilities.Setup(true, 0) }

// strategy is what kube-apiserver's registry does with a kind on a write:
// its create/update strategy for the main resource and, for a kind with a
// status subresource, the status strategy. They are kube-apiserver's own
// (k8s.io/kubernetes pkg/registry/<group>/<kind>/strategy.go), so they
// prepare and validate as the real server does, with its messages.
type strategy struct {
	main   rest.RESTCreateUpdateStrategy
	status rest.RESTUpdateStrategy
	// decode, for a custom kind, is what the custom resource decoder does
	// to an object before the strategy sees it.
	decode func(map[string]any)
}

// builtinStrategies are the strategies of the built-in kinds fakekube
// serves; the snapshot kinds' come from their CRDs (crdstrategy.go).
var builtinStrategies = map[schema.GroupVersionResource]strategy{
	coreV1.WithResource("namespaces"):             {main: namespace.Strategy, status: namespace.StatusStrategy},
	coreV1.WithResource("nodes"):                  {main: node.Strategy, status: node.StatusStrategy},
	coreV1.WithResource("pods"):                   {main: pod.Strategy, status: pod.StatusStrategy},
	coreV1.WithResource("persistentvolumes"):      {main: persistentvolume.Strategy, status: persistentvolume.StatusStrategy},
	coreV1.WithResource("persistentvolumeclaims"): {main: persistentvolumeclaim.Strategy, status: persistentvolumeclaim.StatusStrategy},
	coreV1.WithResource("events"):                 {main: coreevent.Strategy},
	coreV1.WithResource("secrets"):                {main: secret.Strategy},
	coreV1.WithResource("configmaps"):             {main: configmap.Strategy},
	coreV1.WithResource("serviceaccounts"):        {main: serviceaccount.Strategy},
	// events.k8s.io Events are stored as core Events, by the same strategy
	// (pkg/registry/events/rest); it tells the group from the request.
	eventsV1.WithResource("events"):                   {main: coreevent.Strategy},
	storageV1.WithResource("storageclasses"):          {main: storageclass.Strategy},
	storageV1.WithResource("csidrivers"):              {main: csidriver.Strategy},
	storageV1.WithResource("csinodes"):                {main: csinode.Strategy},
	storageV1.WithResource("volumeattachments"):       {main: volumeattachment.Strategy, status: volumeattachment.StatusStrategy},
	storageV1.WithResource("csistoragecapacities"):    {main: csistoragecapacity.Strategy},
	storageV1.WithResource("volumeattributesclasses"): {main: volumeattributesclass.Strategy},
	schedulingV1.WithResource("priorityclasses"):      {main: priorityclass.Strategy},
	appsV1.WithResource("statefulsets"):               {main: statefulset.Strategy, status: statefulset.StatusStrategy},
	appsV1.WithResource("deployments"):                {main: deployment.Strategy, status: deployment.StatusStrategy},
	appsV1.WithResource("replicasets"):                {main: replicaset.Strategy, status: replicaset.StatusStrategy},
	appsV1.WithResource("daemonsets"):                 {main: daemonset.Strategy, status: daemonset.StatusStrategy},
	appsV1.WithResource("controllerrevisions"):        {main: controllerrevision.Strategy},
	coordV1.WithResource("leases"):                    {main: lease.Strategy},
}
