// Package provisioner is the simulated external-provisioner sidecar: it
// creates a volume with CreateVolume for every claim handed to its driver
// and a PersistentVolume for it, and deletes both when a volume of its
// driver — provisioned by it or made by hand — is Released with reclaim
// policy Delete (delete.go).
package provisioner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/container-storage-interface/spec/lib/go/csi"
	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/migration"
	"github.com/csisim/csisim/sim/volumeutil"
)

// Names the real external-provisioner writes (those
// k8s.io/component-helpers/storage/volume exports, the provisioned-by
// annotation and the PV finalizer, are used from there).
const (
	AnnDeletionSecretName            = "volume.kubernetes.io/provisioner-deletion-secret-name"
	AnnDeletionSecretNamespace       = "volume.kubernetes.io/provisioner-deletion-secret-namespace"
	provisionerIdentityKey           = "storage.kubernetes.io/csiProvisionerIdentity"
	csiParameterPrefix               = "csi.storage.k8s.io/"
	defaultCapacity            int64 = 1 << 30
)

// The sidecar's default retry backoff (--retry-interval-start,
// --retry-interval-max).
const (
	RetryIntervalStart = time.Second
	RetryIntervalMax   = 5 * time.Minute
)

// Config configures the provisioner.
type Config struct {
	DriverName string
	// Timeout bounds every CSI call, like the sidecar's --timeout (default
	// 10 s, external-provisioner cmd/csi-provisioner/csi-provisioner.go).
	Timeout time.Duration
	// Capabilities are the driver's, as Check asked them at start: they
	// decide whether it provisions at all, with topology, from snapshots
	// and clones, and how access modes map.
	Capabilities driverinfo.Capabilities
	// Snapshots reads the VolumeSnapshots claims are restored from; nil
	// fails every restore.
	Snapshots snapclientset.Interface
	// RetryIntervalStart and RetryIntervalMax are --retry-interval-start
	// and --retry-interval-max; default the package's constants.
	RetryIntervalStart, RetryIntervalMax time.Duration
	// ExtraCreateMetadata is --extra-create-metadata: CreateVolume's
	// parameters name the claim and the PV (pkg/controller/controller.go).
	ExtraCreateMetadata bool
	// DefaultFSType is --default-fstype: the file system of a volume whose
	// class names none.
	DefaultFSType string
}

// Provisioner is one external-provisioner for one driver.
type Provisioner struct {
	cfg    Config
	client kubernetes.Interface

	csi        csi.ControllerClient
	events     record.EventRecorder
	stopRecs   func()
	identity   string
	claims     corelisters.PersistentVolumeClaimLister
	volumes    corelisters.PersistentVolumeLister
	classes    storagelisters.StorageClassLister
	vaIndex    cache.Indexer // with volumeutil.AttachmentsByVolume
	nodes      corelisters.NodeLister
	csiNodes   storagelisters.CSINodeLister
	drivers    storagelisters.CSIDriverLister
	capacities storagelisters.CSIStorageCapacityLister
	capacityQ  controller.Queue
	cloneQ     controller.Queue
	slow       *slowRetries
	claimQ     controller.Queue
	claimIndex cache.Indexer // with volumeutil.ClaimsByUID
	inProgress claimsInProgress
	volumeQ    controller.Queue
}

// New wires a provisioner to the factory's informers and a CSI controller
// client.
func New(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory, ctrl csi.ControllerClient, rt controller.Runtime) *Provisioner {
	cfg.Timeout = controller.Or(cfg.Timeout, DefaultTimeout)
	cfg.RetryIntervalStart = controller.Or(cfg.RetryIntervalStart, RetryIntervalStart)
	cfg.RetryIntervalMax = controller.Or(cfg.RetryIntervalMax, RetryIntervalMax)
	start, most := cfg.RetryIntervalStart, cfg.RetryIntervalMax
	events, stop := rt.NewEventRecorder(client, eventSource(cfg.DriverName), "")
	p := &Provisioner{
		cfg: cfg, client: client, csi: ctrl, events: events, stopRecs: stop,
		// The sidecar's identity: start time, a number and the driver name.
		identity: fmt.Sprintf("%d-%d-%s", rt.Clock.Now().UnixMilli(), 1, cfg.DriverName),
		claimQ:   rt.NewQueueWithBackoff("provisioner-claims", start, most),
		volumeQ:  rt.NewQueueWithBackoff("provisioner-volumes", start, most),
		cloneQ:   rt.NewQueueWithBackoff("provisioner-cloning-protection", start, most),
		// Not --retry-interval-max: sig-storage-lib-external-provisioner
		// v13 NewProvisionController makes its slow set with the default
		// before it applies the RetryIntervalMax option.
		slow: newSlowRetries(rt.Clock),
	}
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	pvInf := factory.Core().V1().PersistentVolumes()
	scInf := factory.Storage().V1().StorageClasses()
	vaInf := factory.Storage().V1().VolumeAttachments()
	p.claims, p.volumes, p.classes = pvcInf.Lister(), pvInf.Lister(), scInf.Lister()
	_ = volumeutil.AddIndexes(vaInf.Informer(), volumeutil.AttachmentsByVolume)
	p.vaIndex = vaInf.Informer().GetIndexer()
	p.nodes, p.csiNodes = factory.Core().V1().Nodes().Lister(), factory.Storage().V1().CSINodes().Lister()
	p.drivers, p.capacities = factory.Storage().V1().CSIDrivers().Lister(), factory.Storage().V1().CSIStorageCapacities().Lister()
	p.capacityQ = rt.NewQueueWithBackoff("provisioner-capacity", start, most)
	// Capacity is published again when what it depends on changes.
	refreshCapacity := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.capacityQ.Add(capacityKey) },
		UpdateFunc: func(any, any) { p.capacityQ.Add(capacityKey) },
		DeleteFunc: func(any) { p.capacityQ.Add(capacityKey) },
	}
	for _, inf := range []cache.SharedIndexInformer{scInf.Informer(), factory.Storage().V1().CSINodes().Informer(), factory.Storage().V1().CSIDrivers().Informer()} {
		_, _ = inf.AddEventHandler(refreshCapacity)
	}
	_ = volumeutil.AddIndexes(pvcInf.Informer(), volumeutil.ClaimsByUID)
	p.claimIndex = pvcInf.Informer().GetIndexer()
	_, _ = pvcInf.Informer().AddEventHandler(p.claimHandler())
	// The cloning protection looks at claims being deleted.
	_, _ = pvcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.enqueueDeletedClaim,
		UpdateFunc: func(_, obj any) { p.enqueueDeletedClaim(obj) },
	})
	_, _ = pvInf.Informer().AddEventHandler(controller.EnqueueHandler(p.volumeQ))
	// A volume waiting to be deleted waits for its attachments to go.
	_, _ = vaInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		obj = controller.Unwrap(obj)
		if pv := obj.(*storagev1.VolumeAttachment).Spec.Source.PersistentVolumeName; pv != nil {
			p.volumeQ.Add(*pv)
		}
	}})
	return p
}

// Workers are the provisioner's queues and sync functions.
func (p *Provisioner) Workers() []controller.Worker {
	return []controller.Worker{
		{Name: "provisioner-claims", Queue: p.claimQ, Sync: p.syncClaim},
		{Name: "provisioner-volumes", Queue: p.volumeQ, Sync: p.syncVolume},
		{Name: "provisioner-capacity", Queue: p.capacityQ, Sync: p.syncCapacity},
		{Name: "provisioner-cloning-protection", Queue: p.cloneQ, Sync: p.syncCloneSource},
	}
}

// PollCapacity asks for the capacity to be published again; run it every
// CapacityPollInterval seconds.
func (p *Provisioner) PollCapacity(context.Context) { p.capacityQ.Add(capacityKey) }

// syncClaimObject makes one attempt to provision for claim and says what
// a failed one leaves behind in the driver (inprogress.go).
func (p *Provisioner) syncClaimObject(ctx context.Context, claim *corev1.PersistentVolumeClaim) (provisioningState, error) {
	if !p.shouldProvision(claim) {
		return stateFinished, nil
	}
	pvName := "pvc-" + string(claim.UID)
	if _, err := p.volumes.Get(pvName); err == nil {
		return stateFinished, nil // provisioned already; the PV controller binds it
	}
	// The cache may lag behind our own last write; ask the API server.
	if _, err := p.client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{}); err == nil {
		return stateFinished, nil
	}
	className := *claim.Spec.StorageClassName
	class, err := p.classes.Get(className)
	if err != nil {
		return stateNoChange, fmt.Errorf("getting storage class %s: %w", className, err)
	}
	// A class of the in-tree plugin this driver took over is read as the
	// driver's own (csiProvisioner.prepareProvision: translated parameters
	// and topology); the volume is written back in the in-tree form.
	inTree := class.Provisioner
	if plugin, ok := migration.PluginFor(p.cfg.DriverName); ok && class.Provisioner == plugin {
		translated, err := migration.StorageClass(plugin, class)
		if err != nil {
			return stateNoChange, p.failed(ctx, claim, class, fmt.Errorf("failed to translate storage class: %v", err))
		}
		class = translated
	}
	if delayed(class) && claim.Annotations[storagehelpers.AnnSelectedNode] == "" {
		return stateFinished, nil // the scheduler has not chosen a node yet
	}
	if err := p.slow.delayed(claim, class); err != nil {
		return stateNoChange, err // tried again with backoff, without an event
	}
	p.events.Eventf(claim, corev1.EventTypeNormal, "Provisioning", "External provisioner is provisioning volume for claim %q", claim.Namespace+"/"+claim.Name)
	pv, err := p.provision(ctx, claim, class, pvName)
	if errors.Is(err, errPopulator) {
		return stateFinished, nil
	}
	if err != nil {
		return stateAfter(err), p.failed(ctx, claim, class, err)
	}
	if pv, err = p.inTreeForm(pv, inTree); err != nil {
		return stateAfter(err), p.failed(ctx, claim, class, err)
	}
	p.releaseSnapshotSource(ctx, claim)
	if _, err := p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		// The volume exists in the driver: the claim stays in progress,
		// so that a retry saves the PV even if the claim goes meanwhile,
		// as the library's volume store keeps trying to.
		return stateInBackground, fmt.Errorf("creating PersistentVolume %s: %w", pvName, err)
	}
	p.events.Eventf(claim, corev1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume %s", pvName)
	p.refreshCapacityAfterProvision(pv, class)
	return stateFinished, nil
}

// DefaultTimeout is the sidecar's --timeout.
const DefaultTimeout = 10 * time.Second

// Check is the sidecar's start-up check (controller.Check), as its main
// runs it (cmd/csi-provisioner/csi-provisioner.go GetDriverCapabilities):
// GetPluginCapabilities and ControllerGetCapabilities. The sidecar does
// not exit for a driver that cannot provision: it refuses every claim
// (checkDriverCapabilities). A driver that does not answer makes the
// real sidecar exit (klog.Fatalf): see controller.CheckFailed.
func Check(ctx context.Context, d *controller.Driver) error {
	callCtx, cancel := csiclient.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	var err error
	if d.Capabilities.Plugin, d.Capabilities.Expansion, err = driverinfo.AskPlugin(callCtx, d.Identity); err == nil {
		d.Capabilities.Controller, err = driverinfo.AskController(callCtx, d.Controller)
	}
	if err != nil {
		return controller.CheckFailed(fmt.Errorf("Error getting CSI driver capabilities: %w", err))
	}
	return nil
}

// Start starts the sidecar in a simulated cluster (controller.Start) for
// d's driver: its workers, and its poll of the driver's capacity every
// CapacityPollInterval. It reads the snapshots claims are restored from
// with d.Snapshots.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	f := d.Flags
	p := New(Config{DriverName: d.Driver.Name, Capabilities: d.Driver.Capabilities, Snapshots: d.Snapshots, Timeout: f.Timeout,
		RetryIntervalStart: f.RetryIntervalStart, RetryIntervalMax: f.RetryIntervalMax, ExtraCreateMetadata: f.ExtraCreateMetadata,
		DefaultFSType: f.DefaultFSType}, d.Client, d.Informers, d.Driver.Controller, d.Runtime)
	return controller.Component{Workers: p.Workers(), Periodic: []controller.Periodic{{Every: CapacityPollInterval * time.Second, Run: p.PollCapacity}}}, nil
}

// failed reports a failed attempt as the sidecar does (failures.go) and
// says whether to try again: an error to retry with backoff, nil to stop.
func (p *Provisioner) failed(ctx context.Context, claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, err error) error {
	key := claim.Namespace + "/" + claim.Name
	if infeasible(err) {
		p.slow.mark(claim, class)
		p.events.Eventf(claim, corev1.EventTypeWarning, "ProvisioningFailed",
			"Volume provisioning failed with infeasible error. Retries will be delayed. %v", err)
		return fmt.Errorf("provisioning claim %s: %w", key, err)
	}
	p.events.Eventf(claim, corev1.EventTypeWarning, "ProvisioningFailed", "%v", err)
	var resched errReschedule
	if errors.As(err, &resched) || rescheduleAfter(err, p.supportsTopology(), claim) {
		if claim.Annotations[storagehelpers.AnnSelectedNode] != "" {
			if rerr := p.reschedule(ctx, claim); rerr != nil {
				return fmt.Errorf("provisioning claim %s: %w", key, errors.Join(err, rerr))
			}
			return nil // the scheduler chooses again
		}
	}
	return fmt.Errorf("provisioning claim %s: %w", key, err)
}

// provision prepares the request as the sidecar does, in its order, calls
// CreateVolume and returns the PV to create. Its errors are the sidecar's,
// in its words: the event's message.
func (p *Provisioner) provision(ctx context.Context, claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, pvName string) (*corev1.PersistentVolume, error) {
	ds, err := p.dataSource(claim)
	if err != nil {
		return nil, err
	}
	if err := p.checkDriverCapabilities(ds); err != nil {
		return nil, err
	}
	if err := p.checkModifyCapability(claim); err != nil {
		return nil, err
	}
	if claim.Spec.Selector != nil {
		return nil, errors.New("claim Selector is not supported")
	}
	fsType, err := fsTypeOf(class.Parameters)
	if err != nil {
		return nil, err
	}
	if fsType == "" {
		fsType = p.cfg.DefaultFSType // pkg/controller/controller.go ProvisionExt
	}
	volumeCaps, err := capabilities(claim.Spec.AccessModes, claim.Spec.VolumeMode, fsType, class.MountOptions,
		p.cfg.Capabilities.Controller[csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER])
	if err != nil {
		return nil, err
	}
	req := &csi.CreateVolumeRequest{
		Name:               pvName,
		VolumeCapabilities: volumeCaps,
		CapacityRange:      &csi.CapacityRange{RequiredBytes: requestedBytes(claim)},
	}
	if ds != nil {
		if req.VolumeContentSource, err = p.contentSource(ctx, claim, class, ds); err != nil {
			return nil, err
		}
		protect := p.protectCloneSource
		if ds.Kind == snapshotKind {
			protect = p.protectSnapshotSource
		}
		if err := protect(ctx, ds.Namespace, ds.Name); err != nil {
			return nil, err
		}
	}
	if p.supportsTopology() {
		req.AccessibilityRequirements, err = p.accessibilityRequirements(claim, class)
		var resched errReschedule
		if err != nil && !errors.As(err, &resched) {
			err = fmt.Errorf("error generating accessibility requirements: %v", err)
		}
		if err != nil {
			return nil, err
		}
	}
	ref, err := secretRef(class.Parameters, provisionerSecret, claim, pvName)
	if err != nil {
		return nil, err
	}
	if req.Secrets, err = p.secretData(ctx, ref); err != nil {
		return nil, err
	}
	// The other secrets are only named in the PV, but a bad reference
	// fails before CreateVolume.
	if err := applySecretRefs(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName, Annotations: map[string]string{}},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{}}}},
		class.Parameters, claim); err != nil {
		return nil, err
	}
	if req.Parameters, err = driverParameters(class.Parameters); err != nil {
		return nil, err
	}
	if p.cfg.ExtraCreateMetadata {
		// pkg/controller/controller.go's pvcNameKey, pvcNamespaceKey, pvNameKey
		req.Parameters[csiParameterPrefix+"pvc/name"] = claim.Name
		req.Parameters[csiParameterPrefix+"pvc/namespace"] = claim.Namespace
		req.Parameters[csiParameterPrefix+"pv/name"] = pvName
	}
	if req.MutableParameters, err = p.mutableParameters(ctx, claim); err != nil {
		return nil, err
	}
	callCtx, cancel := csiclient.WithTimeout(ctx, p.cfg.Timeout)
	resp, err := p.csi.CreateVolume(callCtx, req)
	cancel()
	if err != nil {
		// A failed CreateVolume may mean that the capacity objects are
		// stale: the class's are published again.
		p.capacityQ.Add(classCapacityKey(class.Name))
		return nil, createVolumeError{err}
	}
	pv := p.volumeFor(claim, class.ReclaimPolicy, class.MountOptions, resp.GetVolume())
	if claim.Spec.VolumeMode == nil || *claim.Spec.VolumeMode != corev1.PersistentVolumeBlock {
		pv.Spec.CSI.FSType = fsType
	}
	if err := applySecretRefs(pv, class.Parameters, claim); err != nil {
		return nil, err
	}
	return pv, nil
}

// delayed: the class binds at the first consumer.
func delayed(class *storagev1.StorageClass) bool {
	return class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// shouldProvision: the claim is handed to this driver, unbound and of a
// storage class. Like the sidecar, it does not look at deletion: a claim
// being deleted (held by its pvc-protection finalizer) that is still
// pending gets one more attempt, when its deletion updates it.
func (p *Provisioner) shouldProvision(claim *corev1.PersistentVolumeClaim) bool {
	if claim.Spec.VolumeName != "" || claim.Spec.StorageClassName == nil {
		return false
	}
	return claim.Annotations[storagehelpers.AnnStorageProvisioner] == p.cfg.DriverName ||
		claim.Annotations[storagehelpers.AnnBetaStorageProvisioner] == p.cfg.DriverName ||
		claim.Annotations[storagehelpers.AnnMigratedTo] == p.cfg.DriverName
}

// inTreeForm is the PV the sidecar writes for a claim of an in-tree
// class (inTree, the class's provisioner) that this driver took over:
// the CSI volume translated back to the plugin's form
// (TranslateCSIPVToInTree), provisioned-by the class's provisioner as the
// library writes it; the PV controller then adds migrated-to. Any other
// PV is returned as it is.
func (p *Provisioner) inTreeForm(pv *corev1.PersistentVolume, inTree string) (*corev1.PersistentVolume, error) {
	if plugin, ok := migration.PluginFor(p.cfg.DriverName); !ok || inTree != plugin {
		return pv, nil
	}
	out, err := migration.ToInTree(pv)
	if err != nil {
		return nil, err
	}
	out.Annotations[storagehelpers.AnnDynamicallyProvisioned] = inTree
	return out, nil
}

func (p *Provisioner) volumeFor(claim *corev1.PersistentVolumeClaim, reclaim *corev1.PersistentVolumeReclaimPolicy,
	mountOptions []string, vol *csi.Volume) *corev1.PersistentVolume {
	capacity := vol.GetCapacityBytes()
	if capacity == 0 {
		capacity = requestedBytes(claim)
	}
	attrs := map[string]string{provisionerIdentityKey: p.identity}
	for k, v := range vol.GetVolumeContext() {
		attrs[k] = v
	}
	policy := corev1.PersistentVolumeReclaimDelete
	if reclaim != nil {
		policy = *reclaim
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name: "pvc-" + string(claim.UID),
			Annotations: map[string]string{
				storagehelpers.AnnDynamicallyProvisioned: p.cfg.DriverName,
				AnnDeletionSecretName:                    "",
				AnnDeletionSecretNamespace:               "",
			},
			Finalizers: []string{storagehelpers.PVDeletionProtectionFinalizer},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(capacity, resource.BinarySI)},
			AccessModes: claim.Spec.AccessModes,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: claim.Namespace,
				Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion},
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              *claim.Spec.StorageClassName,
			MountOptions:                  mountOptions,
			VolumeMode:                    claim.Spec.VolumeMode,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver:           p.cfg.DriverName,
				VolumeHandle:     vol.GetVolumeId(),
				VolumeAttributes: attrs,
			}},
			NodeAffinity:              nodeAffinityOf(vol.GetAccessibleTopology()),
			VolumeAttributesClassName: volumeAttributesClassName(claim),
		},
	}
}

func (p *Provisioner) pvcSource(claim *corev1.PersistentVolumeClaim, name string) (*csi.VolumeContentSource, error) {
	src, err := p.claims.PersistentVolumeClaims(claim.Namespace).Get(name)
	if err != nil {
		return nil, fmt.Errorf("error getting PVC %s (namespace %q) from api server: %v", name, claim.Namespace, err)
	}
	if src.Status.Phase != corev1.ClaimBound {
		return nil, fmt.Errorf("the PVC DataSource %s must have a status of Bound.  Got %v", name, src.Status)
	}
	if src.DeletionTimestamp != nil {
		return nil, fmt.Errorf("the PVC DataSource %s is currently being deleted", name)
	}
	if src.Spec.StorageClassName == nil {
		return nil, fmt.Errorf("the source PVC (%s) storageclass cannot be empty", name)
	}
	want, have := claim.Spec.Resources.Requests[corev1.ResourceStorage], src.Spec.Resources.Requests[corev1.ResourceStorage]
	if want.Value() < have.Value() {
		return nil, fmt.Errorf("error, new PVC request must be greater than or equal in size to the specified PVC data source, requested %v but source is %v",
			want.Value(), have.Value())
	}
	if src.Spec.VolumeName == "" {
		return nil, fmt.Errorf("volume name is empty in source PVC %s", name)
	}
	pv, err := p.volumes.Get(src.Spec.VolumeName)
	if err != nil || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != p.cfg.DriverName || pv.Spec.ClaimRef == nil ||
		pv.Spec.ClaimRef.UID != src.UID || pv.Status.Phase != corev1.VolumeBound {
		return nil, errors.New("claim in dataSource not bound or invalid")
	}
	block := func(m *corev1.PersistentVolumeMode) bool { return m != nil && *m == corev1.PersistentVolumeBlock }
	switch {
	case !block(claim.Spec.VolumeMode) && block(pv.Spec.VolumeMode):
		return nil, errors.New("the source PVC and destination PVCs must have the same volume mode for cloning.  Source is Block, but new PVC requested Filesystem")
	case block(claim.Spec.VolumeMode) && !block(pv.Spec.VolumeMode):
		return nil, errors.New("the source PVC and destination PVCs must have the same volume mode for cloning.  Source is Filesystem, but new PVC requested Block")
	}
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
		Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: pv.Spec.CSI.VolumeHandle}}}, nil
}

func requestedBytes(claim *corev1.PersistentVolumeClaim) int64 {
	if q, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		return q.Value()
	}
	return defaultCapacity
}

// capabilities are the capabilities a claim asks for: one per access mode,
// each mapped on its own as the sidecar maps them.
func capabilities(modes []corev1.PersistentVolumeAccessMode, volumeMode *corev1.PersistentVolumeMode, fsType string, mountFlags []string, singleNodeMultiWriter bool) ([]*csi.VolumeCapability, error) {
	var out []*csi.VolumeCapability
	for _, m := range modes {
		c, err := csiclient.Capability([]corev1.PersistentVolumeAccessMode{m}, volumeMode, fsType, mountFlags, singleNodeMultiWriter)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// eventSource is the component the sidecar's events name, as
// sig-storage-lib-external-provisioner makes it: the driver's name, the
// host's and a UUID of the process, <driver>_<host>_<uuid>. The UUID is
// made from the driver's name, not drawn, so that a seed gives the same
// events.
func eventSource(driver string) string {
	id := uuid.NewSHA1(uuid.NameSpaceURL, []byte("csisim:external-provisioner:"+driver))
	return fmt.Sprintf("%s_%s_%s", driver, controller.SimulatedHost, id)
}
