package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/drivers/launch"
)

func TestDuplicateNodeIDsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{
			name: "one node ID for every node",
			cfg: Config{Nodes: nodeNames(2), Layout: LayoutCombined,
				Driver: launch.Template{Path: "{csisim}", Args: []string{"driver", "--endpoint", "{endpoint}", "--node-id", "the-node",
					"--root", "{root}", "--state-dir", "{stateDir}", "--mode", "all"}}},
			want: `the node plugins on node-1, node-2 all answer NodeGetInfo with node_id "the-node"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cfg := tc.cfg
			cfg.DriverBinary, cfg.Seed = csisimBinary, 1
			c, err := Start(ctx, cfg)
			if err == nil {
				_ = c.Close()
				t.Fatal("the cluster started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v\nwant it to say %q", err, tc.want)
			}
		})
	}
}

// As csi-driver-host-path does, csisim's driver run from one command line
// serves every service and reports its node ID as topology, so in the
// split layout the controller process reports the node "controller". That
// alone is no hint: csisim's driver places volumes where the provisioner
// asks. A volume pinned to "controller" is, with the reason.
func TestHintsNameAVolumePinnedToTheController(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{Nodes: nodeNames(1), Driver: csisimAllServices(), DriverBinary: csisimBinary, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	if hints := c.Hints(ctx); len(hints) != 0 {
		t.Fatalf("hints before any volume is pinned: %q", hints)
	}
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pinned"},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: c.DriverName(), VolumeHandle: "v"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.hostpath.csisim.io/node", Operator: corev1.NodeSelectorOpIn, Values: []string{"controller"}}}}}}}}}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := `PersistentVolume pinned is pinned to topology.hostpath.csisim.io/node=controller, the controller process's {nodeID} in layout split, where no pod can run (the controller process also serves the node service, with topology topology.hostpath.csisim.io/node=controller): the driver runs controller and node in one process; use layout: combined in its profile`
	if hints := c.Hints(ctx); len(hints) != 1 || hints[0] != want {
		t.Fatalf("hints %q, want %q", hints, want)
	}
}

func TestHintsNameAClassOfAnotherDriver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{Nodes: nodeNames(1), Mock: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	if hints := c.Hints(ctx); len(hints) != 0 {
		t.Fatalf("hints before anything is stuck: %q", hints)
	}
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	class := "other"
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class},
		Provisioner: "other.example.com"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}}
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.RunFor(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	want := "claim default/data is Pending: its StorageClass other names provisioner other.example.com, but the driver in this run is hostpath.csisim.io"
	if hints := c.Hints(ctx); len(hints) != 1 || !strings.Contains(hints[0], want) {
		t.Fatalf("hints %q, want one saying %q", hints, want)
	}
}
