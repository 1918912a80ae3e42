package csisimtest

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/sim/cluster"
)

// defaultDriver is the profile a Cluster runs when Options.Driver is empty.
const defaultDriver = "mock"

// loadProfile reads the profile nameOrFile names: a file, or a profile
// csisim ships (built into this package, so that a driver repository needs
// no checkout of csisim).
func loadProfile(nameOrFile string) (*profile.Profile, error) {
	if nameOrFile == "" {
		nameOrFile = defaultDriver
	}
	if strings.ContainsRune(nameOrFile, '/') || strings.HasSuffix(nameOrFile, ".yaml") {
		return profile.Load(nameOrFile)
	}
	data, err := profiles.Read(nameOrFile)
	if err != nil {
		return nil, err
	}
	p, err := profile.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("shipped driver profile %s: %w", nameOrFile, err)
	}
	p.File = "shipped profile " + nameOrFile
	return p, nil
}

// clusterConfig is how a profile becomes the simulator's configuration:
// the one place that knows how a profile's driver is started.
func clusterConfig(p *profile.Profile, opts Options) (cluster.Config, error) {
	n := opts.Nodes
	if n <= 0 {
		n = 1
	}
	cfg := cluster.Config{Seed: opts.Seed, DriverName: p.Name, DriverLog: opts.DriverLog}
	for i := 1; i <= n; i++ {
		cfg.Nodes = append(cfg.Nodes, fmt.Sprintf("node-%d", i))
	}
	if !p.Start.Mock {
		return cluster.Config{}, fmt.Errorf("driver profile %s: starting a driver process from a profile is not wired into csisimtest yet; use the mock profile", p.File)
	}
	cfg.Mock = true
	return cfg, nil
}

// driverObjects are what deploying the driver puts in the cluster, from
// its profile: its CSIDriver and a default StorageClass
// (profile.StorageClassName) that provisions with it at once (binding
// Immediate) and deletes its volumes with their claims.
func driverObjects(p *profile.Profile, driverName string) []runtime.Object {
	attach, podInfo := p.Has(profile.Attach), p.Has(profile.PodInfo)
	modes := []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	if p.Has(profile.Ephemeral) {
		modes = append(modes, storagev1.VolumeLifecycleEphemeral)
	}
	drv := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: driverName},
		Spec:       storagev1.CSIDriverSpec{AttachRequired: &attach, PodInfoOnMount: &podInfo, VolumeLifecycleModes: modes},
	}
	if p.FSGroupPolicy != "" {
		policy := storagev1.FSGroupPolicy(p.FSGroupPolicy)
		drv.Spec.FSGroupPolicy = &policy
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingImmediate
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        profile.StorageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       driverName,
		Parameters:        p.StorageClass.Parameters,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &binding,
	}
	if p.StorageClass.FSType != "" {
		sc.Parameters = map[string]string{"csi.storage.k8s.io/fstype": p.StorageClass.FSType}
		for k, v := range p.StorageClass.Parameters {
			sc.Parameters[k] = v
		}
	}
	return []runtime.Object{drv, sc}
}
