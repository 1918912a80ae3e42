package clusterprofile

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/trace"
)

// lifecycle is a claim on the driver's class used by a pod, and both
// deleted again: what any driver profile must get through.
const lifecycle = `
name: third-party-lifecycle
cluster:
  nodes: [node-1]
steps:
  - apply:
      manifest: |
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        spec:
          accessModes: [ReadWriteOnce]
          storageClassName: csisim-sc
          resources: {requests: {storage: 1Gi}}
  - wait: {object: pvc/data, jsonPath: '{.status.phase}', equals: Bound, timeout: 60s}
  - apply:
      manifest: |
        apiVersion: v1
        kind: Pod
        metadata: {name: app}
        spec:
          containers:
            - name: app
              image: busybox
              command: [sleep, "3600"]
              volumeMounts: [{name: data, mountPath: /data}]
          volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
  - wait: {object: pod/app, jsonPath: '{.status.phase}', equals: Running, timeout: 120s}
  - delete: {object: pod/app}
  - wait: {object: pod/app, gone: true, timeout: 60s}
  - delete: {object: pvc/data}
  - wait: {object: pvc/data, gone: true, timeout: 60s}
`

// TestCSITestMockDriver builds kubernetes-csi/csi-test's mock driver from
// its profile (through the module proxy, once; then from the cache), runs
// it in the combined layout and takes a claim and a pod through their
// whole lifecycle on it.
func TestCSITestMockDriver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	p := load(t, "csi-test-mock")
	sc, err := scenarios.Parse("third-party-lifecycle.yaml", []byte(lifecycle), ".")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Config(ctx, p, profile.Request{Nodes: sc.Cluster.Nodes}, Options{BuildLog: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed = 1
	var driverLog strings.Builder
	cfg.DriverLog = &driverLog
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	if c.DriverName() != p.Name {
		t.Fatalf("the driver reports itself as %s, the profile says %s", c.DriverName(), p.Name)
	}
	// The cluster asked the driver what it says of itself, and the
	// profile contradicts none of it.
	if info := c.DriverInfo(); !info.Asked() || len(p.Contradictions(info)) > 0 {
		t.Fatalf("the driver reports %s; profile %s contradicts it: %q", info, p.File, p.Contradictions(info))
	}
	p = p.Complete(c.DriverInfo())
	if !p.Has(profile.Attach) || !p.Has(profile.Snapshots) || !p.Has(profile.StageUnstage) {
		t.Fatalf("csi-test's mock reports attach, snapshots and stage: %s", c.DriverInfo())
	}
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	drv, class := p.Objects(c.DriverName(), profile.StorageClassName)
	if _, err := cs.StorageV1().CSIDrivers().Create(ctx, drv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := (&scenarios.Runner{Backend: c, Recorder: c.Recorder(), Clock: c.Clock()}).Run(ctx, sc)
	if err != nil || !res.Passed() {
		t.Fatalf("the lifecycle on %s: %v\ndriver output:\n%s", p.Name, err, driverLog.String())
	}
	// The calls went to the csi-test binary, not to one of csisim's own.
	var published bool
	for _, e := range c.Recorder().Filter(trace.CSI) {
		published = published || (e.Verb == "NodePublishVolume" && e.Err == "")
	}
	if !published || !strings.Contains(driverLog.String(), "mock driver started") {
		t.Fatalf("no NodePublishVolume answered by the csi-test mock (published %v); driver output:\n%s", published, driverLog.String())
	}
}
