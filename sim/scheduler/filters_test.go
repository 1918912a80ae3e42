package scheduler

import (
	"maps"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/csisim/csisim/sim/volumeutil"
)

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func zoneVolume(zone string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{
		Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}}
}

// ebsPod and pdPod are pods with an inline in-tree disk.
func ebsPod(volumeID string) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{
		AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://us-east-1a/" + volumeID}}}}}}
}

func pdPod(name string, readOnly bool) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{
		GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: name, ReadOnly: readOnly}}}}}}
}

func rbdPod(monitor, image string, more ...string) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{
		RBD: &corev1.RBDVolumeSource{CephMonitors: append([]string{monitor}, more...), RBDImage: image, RBDPool: "rbd"}}}}}}
}

func TestFits(t *testing.T) {
	noLimit := func(*corev1.Node) bool { return false }
	full := func(*corev1.Node) bool { return true }
	plain := &corev1.Pod{}
	pinned := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"zone": "a"}}}
	tolerant := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}}}
	tainted := node("n", nil, corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule})
	cordoned := node("n", nil)
	cordoned.Spec.Unschedulable = true
	cordonedTainted := node("n", nil, corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule})
	cordonedTainted.Spec.Unschedulable = true
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		node  *corev1.Node
		vols  podVolumes
		limit func(*corev1.Node) bool
		want  string
	}{
		{"fits", plain, node("n", nil), podVolumes{}, noLimit, ""},
		{"cordoned", plain, cordoned, podVolumes{}, noLimit, reasonUnschedulable},
		{"untolerated taint", plain, tainted, podVolumes{}, noLimit, reasonUntoleratedTaint},
		{"cordoned and tainted: the first filter speaks", plain, cordonedTainted, podVolumes{}, noLimit, reasonUnschedulable},
		{"taint before affinity", pinned, tainted, podVolumes{}, noLimit, reasonUntoleratedTaint},
		{"volume limit before volume affinity", plain, node("n", map[string]string{"zone": "b"}),
			podVolumes{bound: []*corev1.PersistentVolume{zoneVolume("a")}}, full, reasonMaxVolumeCount},
		{"tolerated taint", tolerant, tainted, podVolumes{}, noLimit, ""},
		{"node selector", pinned, node("n", map[string]string{"zone": "b"}), podVolumes{}, noLimit, reasonNodeAffinity},
		{"volume in another zone", plain, node("n", map[string]string{"zone": "b"}),
			podVolumes{bound: []*corev1.PersistentVolume{zoneVolume("a")}}, noLimit, reasonVolumeNodeAffinity},
		{"volume in this zone", plain, node("n", map[string]string{"zone": "a"}),
			podVolumes{bound: []*corev1.PersistentVolume{zoneVolume("a")}}, noLimit, ""},
		{"another node was selected", plain, node("n", nil), podVolumes{selected: "m"}, noLimit, reasonNoPersistentVolumes},
		{"bound volume elsewhere and another node selected: both", plain, node("n", map[string]string{"zone": "b"}),
			podVolumes{bound: []*corev1.PersistentVolume{zoneVolume("a")}, selected: "m"}, noLimit, reasonVolumeNodeAffinity + "," + reasonNoPersistentVolumes},
		{"volume limit", plain, node("n", nil), podVolumes{}, full, reasonMaxVolumeCount},
		{"ReadWriteOncePod claim in use", plain, node("n", nil), podVolumes{readWriteOncePodInUse: true}, noLimit, reasonReadWriteOncePodConflict},
		{"ReadWriteOncePod before volume limits", plain, node("n", nil), podVolumes{readWriteOncePodInUse: true}, full, reasonReadWriteOncePodConflict},
		{"node affinity before ReadWriteOncePod", pinned, node("n", map[string]string{"zone": "b"}), podVolumes{readWriteOncePodInUse: true}, noLimit, reasonNodeAffinity},
		{"an EBS disk a pod on the node has", ebsPod("vol-1"), node("n", nil), podVolumes{}, noLimit, reasonDiskConflict},
		{"disk conflict before ReadWriteOncePod", ebsPod("vol-1"), node("n", nil), podVolumes{readWriteOncePodInUse: true}, noLimit, reasonDiskConflict},
		{"another EBS disk", ebsPod("vol-2"), node("n", nil), podVolumes{}, noLimit, ""},
		{"a GCE PD a pod on the node has", pdPod("pd-1", false), node("n", nil), podVolumes{}, noLimit, reasonDiskConflict},
		{"a GCE PD both mount read-only", pdPod("pd-1", true), node("n", nil), podVolumes{}, noLimit, ""},
		{"an RBD image a pod on the node has, through another monitor", rbdPod("m2", "img"), node("n", nil), podVolumes{}, noLimit, reasonDiskConflict},
		{"another RBD image", rbdPod("m1", "other"), node("n", nil), podVolumes{}, noLimit, ""},
		{"an RBD image on no shared monitor", rbdPod("m3", "img"), node("n", nil), podVolumes{}, noLimit, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// On the node: pods with EBS volume vol-1, GCE PD pd-1
			// read-only, RBD image img through monitors m1 and m2.
			running := []*corev1.Pod{ebsPod("vol-1"), pdPod("pd-1", true), rbdPod("m1", "img", "m2")}
			got := fits(tc.pod, tc.node, running, tc.vols, tc.limit)
			if reasons := strings.Join(got.reasons, ","); reasons != tc.want {
				t.Errorf("fits = %q, want %q", reasons, tc.want)
			}
			if want := tc.want == reasonMaxVolumeCount || tc.want == reasonReadWriteOncePodConflict || tc.want == reasonDiskConflict; got.preemptible != want {
				t.Errorf("preemptible = %v, want %v", got.preemptible, want)
			}
		})
	}
}

func TestFailureMessageIsTheRealOne(t *testing.T) {
	affinity, volume := verdict{reasons: []string{reasonNodeAffinity}}, verdict{reasons: []string{reasonVolumeNodeAffinity}}
	s := testScheduler(t, []*corev1.Node{node("a", nil), node("b", nil), node("c", nil)})
	message := func(vs ...verdict) string {
		verdicts := map[string]verdict{}
		for i, n := range []string{"a", "b", "c"}[:len(vs)] {
			verdicts[n] = vs[i]
		}
		p := s.preempt(&corev1.Pod{}, podVolumes{}, s.allNodes()[:len(vs)], verdicts)
		if p.node != "" {
			t.Fatalf("nominated %s", p.node)
		}
		return failureMessage(len(vs), vs, p.postscript)
	}
	got := message(volume, affinity, volume)
	want := "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) didn't match PersistentVolume's node affinity. " +
		"preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
	if got != want {
		t.Errorf("message\n got %q\nwant %q", got, want)
	}
	full, tainted := verdict{reasons: []string{reasonMaxVolumeCount}, preemptible: true}, verdict{reasons: []string{reasonUntoleratedTaint}}
	got = message(tainted, full, tainted)
	want = "0/3 nodes are available: 1 node(s) exceed max volume count, 2 node(s) had untolerated taint(s). " +
		"preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
	if got != want {
		t.Errorf("message\n got %q\nwant %q", got, want)
	}
	both := verdict{reasons: []string{reasonVolumeNodeAffinity, reasonNoPersistentVolumes}}
	got = message(both, affinity)
	want = "0/2 nodes are available: 1 node(s) didn't find available persistent volumes to bind, 1 node(s) didn't match PersistentVolume's node affinity, " +
		"1 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
	if got != want {
		t.Errorf("message\n got %q\nwant %q", got, want)
	}
	never := corev1.PreemptNever
	p := s.preempt(&corev1.Pod{Spec: corev1.PodSpec{PreemptionPolicy: &never}}, podVolumes{}, s.allNodes()[:1], map[string]verdict{"a": full})
	if got, want := failureMessage(1, []verdict{full}, p.postscript), "0/1 nodes are available: 1 node(s) exceed max volume count. not eligible due to preemptionPolicy=Never."; got != want {
		t.Errorf("message\n got %q\nwant %q", got, want)
	}
}

// testScheduler is a scheduler over the given nodes and pods, for the
// filters and preemption; it writes nothing.
func testScheduler(t *testing.T, nodes []*corev1.Node, pods ...*corev1.Pod) *Scheduler {
	t.Helper()
	podIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := podIdx.AddIndexers(cache.Indexers{volumeutil.PodsByNode: func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if err := podIdx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	nodeIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range nodes {
		if err := nodeIdx.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	return &Scheduler{podIndex: podIdx, nodes: corelisters.NewNodeLister(nodeIdx)}
}

// TestPreemption: victims are the pods of lower priority whose going lets
// the pod fit, given back the most important first when it still fits;
// the node with the least important victims wins.
func TestPreemption(t *testing.T) {
	prio := func(p int32) *int32 { return &p }
	pod := func(name, nodeName string, priority int32, cpu, claim string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec:   corev1.PodSpec{NodeName: nodeName, Priority: prio(priority), Containers: []corev1.Container{{Name: "c"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if cpu != "" {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		}
		if claim != "" {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
		}
		return p
	}
	cpuNode := func(name string) *corev1.Node {
		n := node(name, nil)
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		return n
	}
	holder := pod("holder", "a", 0, "", "data")
	for _, tc := range []struct {
		name        string
		pods        []*corev1.Pod
		incoming    *corev1.Pod
		vols        podVolumes
		wantNode    string
		wantVictims string
		wantPS      string
	}{
		{name: "the holder of a ReadWriteOncePod claim, of lower priority", pods: []*corev1.Pod{holder, pod("bystander", "a", 0, "", "")},
			incoming: pod("high", "", 100, "", "data"), vols: podVolumes{readWriteOncePodInUse: true, readWriteOncePodUsers: []*corev1.Pod{holder}},
			wantNode: "a", wantVictims: "holder"},
		{name: "the holder of equal priority", pods: []*corev1.Pod{holder},
			incoming: pod("same", "", 0, "", "data"), vols: podVolumes{readWriteOncePodInUse: true, readWriteOncePodUsers: []*corev1.Pod{holder}},
			wantPS: "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."},
		{name: "cpu: the least important victims, the others given back", pods: []*corev1.Pod{
			pod("a-low", "a", 1, "1", ""), pod("a-mid", "a", 5, "1", ""), pod("b-mid", "b", 5, "1", ""), pod("b-mid2", "b", 5, "1", "")},
			incoming: pod("big", "", 10, "1", ""), wantNode: "a", wantVictims: "a-low"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testScheduler(t, []*corev1.Node{cpuNode("a"), cpuNode("b")}, tc.pods...)
			verdicts := map[string]verdict{}
			for _, n := range s.allNodes() {
				v := fits(tc.incoming, n, s.runningOn(n.Name), tc.vols, func(*corev1.Node) bool { return false })
				if v.fits() {
					t.Fatalf("fits on %s", n.Name)
				}
				verdicts[n.Name] = v
			}
			p := s.preempt(tc.incoming, tc.vols, s.allNodes(), verdicts)
			var victims []string
			for _, v := range p.victims {
				victims = append(victims, v.Name)
			}
			if tc.wantNode != "" {
				tc.wantPS = "preemption: found a potential placement for pod on node " + tc.wantNode + ", preempting 1 victims"
			}
			if p.node != tc.wantNode || strings.Join(victims, ",") != tc.wantVictims || p.postscript != tc.wantPS {
				t.Errorf("preempt = node %q victims %v postscript %q; want %q %q %q", p.node, victims, p.postscript, tc.wantNode, tc.wantVictims, tc.wantPS)
			}
		})
	}
}

func TestPreFilterMessageIsTheRealOne(t *testing.T) {
	got := preFilterMessage(3, "pod has unbound immediate PersistentVolumeClaims")
	want := "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"
	if got != want {
		t.Errorf("message\n got %q\nwant %q", got, want)
	}
}

func TestExceedsVolumeLimits(t *testing.T) {
	const drv, other = "hostpath.csisim.io", "other.csi.io"
	limits := map[string]int32{drv: 2}
	for _, tc := range []struct {
		name             string
		attached, wanted map[string]string
		want             bool
	}{
		{"room for one more", map[string]string{drv + "/a": drv}, map[string]string{drv + "/b": drv}, false},
		{"full", map[string]string{drv + "/a": drv, drv + "/b": drv}, map[string]string{drv + "/c": drv}, true},
		{"two new do not fit next to one", map[string]string{drv + "/a": drv}, map[string]string{drv + "/b": drv, drv + "/c": drv}, true},
		{"a volume the node has costs nothing", map[string]string{drv + "/a": drv, drv + "/b": drv}, map[string]string{drv + "/a": drv}, false},
		{"over the limit already, nothing new", map[string]string{drv + "/a": drv, drv + "/b": drv, drv + "/c": drv}, map[string]string{drv + "/c": drv}, false},
		{"another driver has no limit", map[string]string{drv + "/a": drv, drv + "/b": drv}, map[string]string{other + "/x": other}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := exceedsVolumeLimits(limits, tc.attached, tc.wanted); got != tc.want {
				t.Errorf("exceedsVolumeLimits = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStaticMatches(t *testing.T) {
	rwo := corev1.ReadWriteOnce
	pv := func(name, size, zone string, labels map[string]string) *corev1.PersistentVolume {
		v := zoneVolume(zone)
		v.Name, v.Labels = name, labels
		v.Spec.StorageClassName = "local"
		v.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{rwo}
		v.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
		v.Status.Phase = corev1.VolumeAvailable
		return v
	}
	claim := func(name, size string) *corev1.PersistentVolumeClaim {
		class := "local"
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{rwo},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
	}
	nodeA := node("n", map[string]string{"zone": "a"})
	small, big := claim("small", "1Gi"), claim("big", "2Gi")
	selective := claim("selective", "1Gi")
	selective.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"disk": "ssd"}}
	reserved := pv("reserved", "5Gi", "a", nil)
	reserved.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "small"}
	reservedElsewhere := pv("reserved", "5Gi", "b", nil)
	reservedElsewhere.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "small"}
	for _, tc := range []struct {
		name    string
		claims  []*corev1.PersistentVolumeClaim
		volumes []*corev1.PersistentVolume
		want    map[string]string // claim → volume
	}{
		{"smaller claim first, each its own volume", []*corev1.PersistentVolumeClaim{big, small},
			[]*corev1.PersistentVolume{pv("two", "2Gi", "a", nil), pv("one", "1Gi", "a", nil)}, map[string]string{"small": "one", "big": "two"}},
		{"a volume is taken once", []*corev1.PersistentVolumeClaim{small, claim("other", "1Gi")},
			[]*corev1.PersistentVolume{pv("one", "1Gi", "a", nil)}, map[string]string{"small": "one"}},
		{"not in another zone", []*corev1.PersistentVolumeClaim{small}, []*corev1.PersistentVolume{pv("one", "1Gi", "b", nil)}, map[string]string{}},
		{"selector", []*corev1.PersistentVolumeClaim{selective},
			[]*corev1.PersistentVolume{pv("hdd", "1Gi", "a", nil), pv("ssd", "3Gi", "a", map[string]string{"disk": "ssd"})}, map[string]string{"selective": "ssd"}},
		{"pre-bound wins", []*corev1.PersistentVolumeClaim{small}, []*corev1.PersistentVolume{pv("one", "1Gi", "a", nil), reserved},
			map[string]string{"small": "reserved"}},
		{"pre-bound elsewhere: no match at all", []*corev1.PersistentVolumeClaim{small},
			[]*corev1.PersistentVolume{reservedElsewhere, pv("one", "1Gi", "a", nil)}, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for c, v := range staticMatches(tc.claims, tc.volumes, nodeA) {
				got[c.Name] = v.Name
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("staticMatches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInsufficientResources(t *testing.T) {
	n := node("n", nil)
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("2")}
	pod := func(cpu, memory string) *corev1.Pod {
		requests := corev1.ResourceList{}
		if cpu != "" {
			requests[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if memory != "" {
			requests[corev1.ResourceMemory] = resource.MustParse(memory)
		}
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: requests}}}}}
	}
	always := corev1.ContainerRestartPolicyAlways
	withInit := pod("500m", "")
	withInit.Spec.InitContainers = []corev1.Container{
		{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}, RestartPolicy: &always},
		{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}},
	}
	for _, tc := range []struct {
		name         string
		pod          *corev1.Pod
		running      []*corev1.Pod
		want         string
		unresolvable bool
	}{
		{"no requests fit anywhere", &corev1.Pod{}, nil, "", false},
		{"fits", pod("1", "1Gi"), []*corev1.Pod{pod("1", "")}, "", false},
		{"cpu taken by others", pod("1500m", ""), []*corev1.Pod{pod("1", "")}, "Insufficient cpu", false},
		{"more than the node has", pod("3", "9Gi"), nil, "Insufficient cpu,Insufficient memory", true},
		{"too many pods", &corev1.Pod{}, []*corev1.Pod{{}, {}}, "Too many pods", false},
		// The sidecar (1) runs while the second init container (1.5) does: 2.5 > 2.
		{"an init container next to a sidecar", withInit, nil, "Insufficient cpu", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reasons, unresolvable := insufficientResources(tc.pod, n, tc.running)
			if got := strings.Join(reasons, ","); got != tc.want || unresolvable != tc.unresolvable {
				t.Errorf("insufficientResources = %q, unresolvable %v; want %q, %v", got, unresolvable, tc.want, tc.unresolvable)
			}
		})
	}
}

// TestClaimInUse: VolumeRestrictions counts the pods on a node that use a
// claim of the same name in the pod's namespace, terminating ones too,
// finished ones and the pod itself not.
func TestClaimUsers(t *testing.T) {
	user := func(name, ns, nodeName, claimName string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + ns + "-" + name)},
			Spec: corev1.PodSpec{NodeName: nodeName, Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}}},
			Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	me := user("me", "default", "", "data", corev1.PodPending, false)
	for _, tc := range []struct {
		name   string
		others []*corev1.Pod
		want   bool
	}{
		{"nobody", nil, false},
		{"a running pod", []*corev1.Pod{user("a", "default", "n1", "data", corev1.PodRunning, false)}, true},
		{"a terminating pod", []*corev1.Pod{user("a", "default", "n1", "data", corev1.PodRunning, true)}, true},
		{"a pod not yet scheduled", []*corev1.Pod{user("a", "default", "", "data", corev1.PodPending, false)}, false},
		{"a finished pod", []*corev1.Pod{user("a", "default", "n1", "data", corev1.PodSucceeded, false), user("b", "default", "n1", "data", corev1.PodFailed, false)}, false},
		{"another namespace", []*corev1.Pod{user("a", "other", "n1", "data", corev1.PodRunning, false)}, false},
		{"another claim", []*corev1.Pod{user("a", "default", "n1", "logs", corev1.PodRunning, false)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, p := range append([]*corev1.Pod{me}, tc.others...) {
				if err := idx.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			s := &Scheduler{podIndex: idx}
			if got := len(s.claimUsers(me, "data")) > 0; got != tc.want {
				t.Errorf("claim in use = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWithNominated: pods nominated to a node with a priority not lower
// than the incoming pod's count there, and as users of its
// ReadWriteOncePod claims; others do not.
func TestWithNominated(t *testing.T) {
	prio := func(p int32) *int32 { return &p }
	nominated := func(name, nodeName string, priority int32, claim string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{Priority: prio(priority), Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
			Status: corev1.PodStatus{NominatedNodeName: nodeName}}
	}
	incoming := nominated("me", "", 10, "data")
	s := testScheduler(t, nil, incoming, nominated("urgent", "a", 100, "data"), nominated("low", "a", 1, "data"),
		nominated("elsewhere", "b", 100, "data"), nominated("other-claim", "a", 100, "logs"))
	on, vols := s.withNominated(incoming, "a", nil, podVolumes{readWriteOncePodClaims: []string{"data"}})
	var names []string
	for _, p := range on {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	if got := strings.Join(names, ","); got != "other-claim,urgent" {
		t.Errorf("pods on a = %s, want other-claim,urgent", got)
	}
	if !vols.readWriteOncePodInUse || len(vols.readWriteOncePodUsers) != 1 || vols.readWriteOncePodUsers[0].Name != "urgent" {
		t.Errorf("claim users = %v (in use %v), want urgent", vols.readWriteOncePodUsers, vols.readWriteOncePodInUse)
	}
	if fits(incoming, node("a", nil), on, vols, func(*corev1.Node) bool { return false }).fits() {
		t.Error("fits beside a nominated pod holding its ReadWriteOncePod claim")
	}
}

// TestInlineMigratedVolumeCounts: NodeVolumeLimits counts a pod's inline
// in-tree EBS volume for the driver it migrated to, by its translated
// volume ID.
func TestInlineMigratedVolumeCounts(t *testing.T) {
	got := (&Scheduler{}).podCSIVolumes(ebsPod("vol-1"))
	if len(got) != 1 || got["ebs.csi.aws.com/vol-1"] != "ebs.csi.aws.com" {
		t.Errorf("podCSIVolumes = %v", got)
	}
}
