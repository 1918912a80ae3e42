package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/controller"
)

// statusEnv is an env whose pod has a container that mounts the claim,
// whose PV is bound to the claim and whose Node has an InternalIP. With
// unattached the volume is not yet in the node's volumesAttached.
func statusEnv(t *testing.T, unattached bool, mutate func(*corev1.Pod)) *env {
	t.Helper()
	e := newEnv(t, envOptions{caps: stageCaps()})
	ctx := context.Background()
	e.k.cfg.PodSubnet = "10.88.1.0/24"
	pv, err := e.client.CoreV1().PersistentVolumes().Get(ctx, testPV, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "data"}
	if _, err := e.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	node, err := e.client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: testNode},
		{Type: corev1.NodeInternalIP, Address: "172.18.0.2"}}
	if unattached {
		node.Status.VolumesAttached = nil
	}
	if _, err := e.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.pod.Generation = 1
	e.pod.Spec.Containers = []corev1.Container{{Name: "app", Image: "busybox",
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}
	e.pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(e.clock.Now().Add(-time.Minute))}}
	if mutate != nil {
		mutate(e.pod)
	}
	if _, err := e.client.CoreV1().Pods("default").Update(ctx, e.pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the informers to see the changes", func() bool {
		p, perr := e.k.pods.Pods("default").Get("app")
		v, verr := e.k.volumes.Get(testPV)
		n, nerr := e.k.nodes.Get(testNode)
		return perr == nil && verr == nil && nerr == nil && p.Generation == 1 && v.Spec.ClaimRef != nil &&
			len(n.Status.Addresses) > 0
	})
	e.client.ClearActions()
	return e
}

// podStatusPatches are the kubelet's patches of the pod's status so far.
func (e *env) podStatusPatches() []string {
	var out []string
	for _, a := range e.client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && a.GetResource().Resource == "pods" && a.GetSubresource() == "status" {
			out = append(out, string(p.GetPatch()))
		}
	}
	return out
}

// apiPod is the pod as the API server has it.
func (e *env) apiPod() *corev1.Pod {
	e.t.Helper()
	p, err := e.client.CoreV1().Pods("default").Get(context.Background(), "app", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// syncAndWait syncs the pod once and waits until the informer shows what
// cond looks for; it returns the sync's error.
func (e *env) syncAndWait(what string, cond func(*corev1.Pod) bool) error {
	e.t.Helper()
	err := e.sync("default/app")
	e.waitFor(what, func() bool {
		p, perr := e.k.pods.Pods("default").Get("app")
		return perr == nil && cond(p)
	})
	return err
}

// syncUntilRunning syncs the pod as its queue would, the clock moved on
// to each requeue, until the informer shows it Running.
func (e *env) syncUntilRunning() {
	e.t.Helper()
	for range 10 {
		err := e.sync("default/app")
		if err == nil {
			e.waitFor("the pod Running", func() bool {
				p, perr := e.k.pods.Pods("default").Get("app")
				return perr == nil && p.Status.Phase == corev1.PodRunning
			})
			return
		}
		d, ok := requeuedAfter(err)
		if !ok {
			e.t.Fatalf("sync: %v", err)
		}
		e.clock.Step(d)
	}
	e.t.Fatal("the pod never ran")
}

func requeuedAfter(err error) (time.Duration, bool) {
	var again controller.RequeueAfter
	if errors.As(err, &again) {
		return time.Duration(again), true
	}
	return 0, false
}

func TestNextLook(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	i := podAttachAndMountRetryInterval
	tests := []struct {
		name          string
		now           time.Time
		mountedBefore bool
		want          time.Time
	}{
		{"mounted before the first look", t0, true, t0},
		{"mounted at the first look", t0, false, t0.Add(i)},
		{"mounted between looks", t0.Add(i + time.Millisecond), false, t0.Add(2 * i)},
		{"at a later look, mounted before", t0.Add(3 * i), true, t0.Add(3 * i)},
		{"at a later look, mounted now", t0.Add(3 * i), false, t0.Add(4 * i)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextLook(t0, tc.now, tc.mountedBefore); !got.Equal(tc.want) {
				t.Errorf("got %v, want %v", got.Sub(t0), tc.want.Sub(t0))
			}
		})
	}
}

// mountFailures are the "Unable to attach or mount volumes" events.
func (e *env) mountFailures() []corev1.Event {
	var out []corev1.Event
	for _, ev := range e.events() {
		if ev.Reason == "FailedMount" && strings.HasPrefix(ev.Message, "Unable to attach or mount volumes") {
			out = append(out, ev)
		}
	}
	return out
}

// While its volume is not attached, the pod shows what the real kubelet
// writes before it waits for the volumes — written once.
func TestStatusWhileWaitingForVolumes(t *testing.T) {
	e := statusEnv(t, true, nil)
	scheduled := e.pod.Status.Conditions[0].LastTransitionTime
	if err := e.syncAndWait("the ContainerCreating status", func(p *corev1.Pod) bool { return len(p.Status.ContainerStatuses) > 0 }); err == nil {
		t.Fatal("sync of a pod whose volume is not attached: no error")
	}
	now := metav1.NewTime(e.clock.Now()).Rfc3339Copy()
	got := e.apiPod().Status
	unready := "containers with unready status: [app]"
	want := corev1.PodStatus{
		Phase:              corev1.PodPending,
		ObservedGeneration: 1,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse, Reason: "PodSandboxNotReady",
				Message: "no pod sandbox exists", ObservedGeneration: 1, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: unready,
				ObservedGeneration: 1, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: unready,
				ObservedGeneration: 1, LastTransitionTime: now},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: scheduled},
		},
		HostIP:    "172.18.0.2",
		HostIPs:   []corev1.HostIP{{IP: "172.18.0.2"}},
		StartTime: &now,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "busybox", Started: ptr(false),
			State:        corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
			VolumeMounts: []corev1.VolumeMountStatus{{Name: "data", MountPath: "/data"}}}},
		QOSClass:  corev1.PodQOSBestEffort,
		Resources: &corev1.ResourceRequirements{},
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("status\n%s\nwant\n%s", g, w)
	}
	// Waiting on: no new writes, however often the pod is synced.
	for range 3 {
		e.clock.Step(time.Second)
		_ = e.sync("default/app")
	}
	if patches := e.podStatusPatches(); len(patches) != 1 {
		t.Errorf("status patches %q, want one", patches)
	}
	if got := e.mountFailures(); len(got) != 0 {
		t.Errorf("events %v: none for a volume that is only waiting", got)
	}
}

// Once its volumes are set up, the pod runs: all five conditions True,
// its container running with an ID, its image resolved, a pod IP.
func TestStatusOnceRunning(t *testing.T) {
	e := statusEnv(t, false, func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
		p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000)), FSGroup: ptr(int64(2000))}
	})
	created := metav1.NewTime(e.clock.Now()).Rfc3339Copy()
	e.syncUntilRunning()
	// Mounted at once, seen at WaitForAttachAndMount's next look.
	if ran := e.clock.Now().Sub(created.Time); ran != podAttachAndMountRetryInterval {
		t.Errorf("running %v after the first sync, want %v", ran, podAttachAndMountRetryInterval)
	}
	got := e.apiPod().Status
	if patches := e.podStatusPatches(); len(patches) != 2 {
		t.Errorf("status patches %q, want ContainerCreating, then Running", patches)
	}
	for _, c := range got.Conditions {
		if c.Status != corev1.ConditionTrue || c.Reason != "" || c.Message != "" {
			t.Errorf("condition %+v, want True", c)
		}
	}
	if rs := got.ContainerStatuses[0].State.Running; rs == nil || !rs.StartedAt.Equal(&metav1.Time{Time: e.clock.Now().Truncate(time.Second)}) {
		t.Errorf("running state %+v, want started now", got.ContainerStatuses[0].State)
	}
	if got.PodIP != "10.88.1.2" || !reflect.DeepEqual(got.PodIPs, []corev1.PodIP{{IP: "10.88.1.2"}}) || got.HostIP != "172.18.0.2" {
		t.Errorf("podIP %q podIPs %v hostIP %q", got.PodIP, got.PodIPs, got.HostIP)
	}
	if !got.StartTime.Equal(&created) || got.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("startTime %v, qosClass %s", got.StartTime, got.QOSClass)
	}
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	if got.Resources == nil || !reflect.DeepEqual(got.Resources.Requests, cpu) || !reflect.DeepEqual(got.AllocatedResources, cpu) {
		t.Errorf("pod resources %v, allocated %v", got.Resources, got.AllocatedResources)
	}
	cs := got.ContainerStatuses[0]
	wantID := containerID("uid-1", "app")
	if cs.State.Running == nil || !cs.Ready || cs.Started == nil || !*cs.Started || cs.RestartCount != 0 ||
		cs.Image != "docker.io/library/busybox:latest" || !strings.HasPrefix(cs.ImageID, "docker.io/library/busybox@sha256:") ||
		cs.ContainerID != wantID || !strings.HasPrefix(wantID, "containerd://") || len(wantID) != len("containerd://")+64 {
		t.Errorf("container status %+v", cs)
	}
	if u := cs.User; u == nil || u.Linux.UID != 1000 || u.Linux.GID != 0 || !reflect.DeepEqual(u.Linux.SupplementalGroups, []int64{0, 2000}) {
		t.Errorf("user %+v", cs.User)
	}
	if cs.Resources == nil || !reflect.DeepEqual(cs.Resources.Requests, cpu) || len(cs.VolumeMounts) != 1 {
		t.Errorf("resources %v, volume mounts %v", cs.Resources, cs.VolumeMounts)
	}
	if containerID("uid-1", "app") != wantID || containerID("uid-2", "app") == wantID {
		t.Error("container IDs are not made from the pod and the container")
	}
}

// Pods get the lowest address of the node's subnet no pod here has.
func TestSandboxIP(t *testing.T) {
	tests := []struct {
		name   string
		subnet string
		others []string // pod IPs of other pods on the node
		own    string   // the pod's own podIP
		want   string
	}{
		{name: "first", subnet: "10.88.3.0/24", want: "10.88.3.2"},
		{name: "default subnet", want: "10.88.0.2"},
		{name: "the next free", subnet: "10.88.3.0/24", others: []string{"10.88.3.2", "10.88.3.4"}, want: "10.88.3.3"},
		{name: "keeps its own", subnet: "10.88.3.0/24", own: "10.88.3.9", want: "10.88.3.9"},
		{name: "no broadcast address", subnet: "10.88.3.0/30", others: []string{"10.88.3.2"}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			e.k.cfg.PodSubnet = tc.subnet
			for i, ip := range tc.others {
				other := e.pod.DeepCopy()
				other.Name, other.UID = "other-"+string(rune('a'+i)), types.UID("other-"+string(rune('a'+i)))
				other.ResourceVersion = ""
				other.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}
				if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), other, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			e.waitFor("the other pods", func() bool {
				pods, _ := e.k.pods.List(labels.Everything())
				return len(pods) == len(tc.others)+1
			})
			pod := e.pod.DeepCopy()
			pod.Status.PodIP = tc.own
			got, err := e.k.sandboxIP(pod)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("got %s, want no free address", got)
				}
				return
			}
			if err != nil || got != netip.MustParseAddr(tc.want) {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
			// The same pod keeps it.
			if again, _ := e.k.sandboxIP(pod); again != got {
				t.Errorf("again: %s", again)
			}
		})
	}
}

func TestNormalizedImage(t *testing.T) {
	for image, want := range map[string]string{
		"busybox":                                   "docker.io/library/busybox:latest",
		"busybox:1.36":                              "docker.io/library/busybox:1.36",
		"csisim/workload":                           "docker.io/csisim/workload:latest",
		"registry.k8s.io/pause:3.10":                "registry.k8s.io/pause:3.10",
		"localhost/csisim-workload":                 "localhost/csisim-workload:latest",
		"localhost:5000/x/y:v1":                     "localhost:5000/x/y:v1",
		"registry:5000/app":                         "registry:5000/app:latest",
		"busybox@sha256:" + strings.Repeat("a", 64): "docker.io/library/busybox@sha256:" + strings.Repeat("a", 64),
	} {
		if got := normalizedImage(image); got != want {
			t.Errorf("normalizedImage(%q) = %q, want %q", image, got, want)
		}
	}
	digest := "docker.io/library/busybox@sha256:" + strings.Repeat("a", 64)
	if got := imageID(digest); got != digest {
		t.Errorf("imageID of a digest = %q", got)
	}
	if a, b := imageID("docker.io/library/busybox:latest"), imageID("docker.io/library/busybox:1.36"); a == b ||
		!strings.HasPrefix(a, "docker.io/library/busybox@sha256:") {
		t.Errorf("image IDs %q, %q", a, b)
	}
}

func TestPodQOS(t *testing.T) {
	rl := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	c := func(req, lim corev1.ResourceList) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	tests := []struct {
		name string
		pod  corev1.Pod
		want corev1.PodQOSClass
	}{
		{"nothing asked for", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{}}}}, corev1.PodQOSBestEffort},
		{"requests only", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c(rl("1", ""), nil)}}}, corev1.PodQOSBurstable},
		{"requests equal limits", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c(rl("1", "1Gi"), rl("1", "1Gi"))}}},
			corev1.PodQOSGuaranteed},
		{"limits for CPU only", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c(rl("1", ""), rl("1", ""))}}},
			corev1.PodQOSBurstable},
		{"one guaranteed, one best effort", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			c(rl("1", "1Gi"), rl("1", "1Gi")), {}}}}, corev1.PodQOSBurstable},
		{"an init container counts", corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{c(rl("1", ""), nil)},
			Containers: []corev1.Container{{}}}}, corev1.PodQOSBurstable},
		{"pod-level resources decide", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{}},
			Resources: &corev1.ResourceRequirements{Requests: rl("1", "1Gi"), Limits: rl("1", "1Gi")}}}, corev1.PodQOSGuaranteed},
		{"the API server's class stays", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{}}},
			Status: corev1.PodStatus{QOSClass: corev1.PodQOSGuaranteed}}, corev1.PodQOSGuaranteed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := podQOS(&tc.pod); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// A pod whose claim the volume manager cannot take in gets the real
// kubelet's FailedMount event a retry interval after each attempt began,
// and its pod worker backs off in between.
func TestUnableToAttachOrMountVolumes(t *testing.T) {
	prefix := "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: "
	tests := []struct {
		name   string
		change func(e *env)
		want   string
	}{{
		name: "claim not found",
		change: func(e *env) {
			if err := e.client.CoreV1().PersistentVolumeClaims("default").Delete(context.Background(), "data", metav1.DeleteOptions{}); err != nil {
				e.t.Fatal(err)
			}
			e.waitFor("the claim gone", func() bool { _, err := e.k.claims.PersistentVolumeClaims("default").Get("data"); return err != nil })
		},
		want: `error processing PVC default/data: failed to fetch PVC from API server: persistentvolumeclaims "data" not found`,
	}, {
		name: "claim not bound",
		change: func(e *env) {
			e.updateClaim(func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimPending })
		},
		want: "error processing PVC default/data: PVC is not bound",
	}, {
		name: "claim being deleted without protection",
		change: func(e *env) {
			e.updateClaim(func(c *corev1.PersistentVolumeClaim) { now := metav1.Now(); c.DeletionTimestamp = &now })
		},
		want: "error processing PVC default/data: PVC is being deleted",
	}, {
		name: "PV bound to another claim",
		change: func(e *env) {
			e.updatePV(func(pv *corev1.PersistentVolume) { pv.Spec.ClaimRef.UID = "other" })
		},
		want: "error processing PVC default/data: found PV object pv-1 but its pv.Spec.ClaimRef.UID other does not point to claim.UID ",
	}, {
		name: "PV not bound",
		change: func(e *env) {
			e.updatePV(func(pv *corev1.PersistentVolume) { pv.Spec.ClaimRef = nil })
		},
		want: "error processing PVC default/data: found PV object pv-1 but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim",
	}, {
		name: "block volume mounted",
		change: func(e *env) {
			e.updatePV(func(pv *corev1.PersistentVolume) { mode := corev1.PersistentVolumeBlock; pv.Spec.VolumeMode = &mode })
		},
		want: "volume data has volumeMode Block, but is specified in volumeMounts",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := statusEnv(t, false, nil)
			tc.change(e)
			start := e.clock.Now()
			err := e.sync("default/app")
			if d, ok := requeuedAfter(err); !ok || d != podAttachAndMountRetryInterval {
				t.Fatalf("first sync: %v, want a requeue after the retry interval", err)
			}
			if got := e.mountFailures(); len(got) != 0 {
				t.Fatalf("an event before the first look: %v", got)
			}
			e.clock.Step(podAttachAndMountRetryInterval)
			if d, ok := requeuedAfter(e.sync("default/app")); !ok || d != podWorkerBackOff {
				t.Fatalf("at the first look: requeue %v, want the pod worker's backoff", d)
			}
			got := e.mountFailures()
			if len(got) != 1 || got[0].Message != prefix+tc.want || got[0].Type != corev1.EventTypeWarning {
				t.Fatalf("events %+v, want one %q", got, prefix+tc.want)
			}
			// Backing off: nothing new, however often the pod is synced.
			e.clock.Step(podWorkerBackOff / 2)
			if d, ok := requeuedAfter(e.sync("default/app")); !ok || d > podWorkerBackOff/2 {
				t.Fatalf("backing off: requeue %v", d)
			}
			// The next attempt looks a retry interval after it began.
			e.clock.SetTime(start.Add(podAttachAndMountRetryInterval + podWorkerBackOff))
			_ = e.sync("default/app")
			e.clock.Step(podAttachAndMountRetryInterval)
			_ = e.sync("default/app")
			got = e.mountFailures()
			if len(got) != 1 || got[0].Count != 2 {
				t.Fatalf("events %+v, want the one counted twice", got)
			}
			if p := e.apiPod(); p.Status.Phase != corev1.PodPending || p.Status.ContainerStatuses[0].State.Waiting == nil {
				t.Errorf("pod status %+v", p.Status)
			}
		})
	}
}

func (e *env) updateClaim(f func(*corev1.PersistentVolumeClaim)) {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "data", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	f(c)
	if _, err := e.client.CoreV1().PersistentVolumeClaims("default").Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("the claim changed", func() bool {
		got, err := e.k.claims.PersistentVolumeClaims("default").Get("data")
		return err == nil && got.Status.Phase == c.Status.Phase && (got.DeletionTimestamp == nil) == (c.DeletionTimestamp == nil)
	})
}

func (e *env) updatePV(f func(*corev1.PersistentVolume)) {
	e.t.Helper()
	pv, err := e.client.CoreV1().PersistentVolumes().Get(context.Background(), testPV, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	f(pv)
	if _, err := e.client.CoreV1().PersistentVolumes().Update(context.Background(), pv, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("the PV changed", func() bool {
		got, err := e.k.volumes.Get(testPV)
		return err == nil && reflect.DeepEqual(got.Spec, pv.Spec)
	})
}

// An unused volume is none of the pod's: no event for it.
func TestUnusedVolumeIsNotProcessed(t *testing.T) {
	e := statusEnv(t, false, func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts = nil })
	e.updateClaim(func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimPending })
	_ = e.sync("default/app")
	e.clock.Step(time.Second)
	_ = e.sync("default/app")
	if got := e.mountFailures(); len(got) != 0 {
		t.Errorf("events %v", got)
	}
}

// A pod whose volume takes longer than podAttachAndMountTimeout to be
// attached: the pod worker gives up without an event (v1.37) and starts
// the pod only when its backoff is over, although the volume manager has
// mounted the volume before.
func TestAttachAndMountTimeout(t *testing.T) {
	e := statusEnv(t, true, nil)
	start := e.clock.Now()
	_ = e.sync("default/app")
	e.clock.SetTime(start.Add(podAttachAndMountTimeout + time.Second))
	_ = e.sync("default/app")
	// Attached now, in the pod worker's backoff: mounted, not started.
	node, err := e.client.CoreV1().Nodes().Get(context.Background(), testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.VolumesAttached = []corev1.AttachedVolume{{Name: attachdetach.UniqueVolumeName(testDriver, testHandle)}}
	if _, err := e.client.CoreV1().Nodes().UpdateStatus(context.Background(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the node's volumesAttached", func() bool {
		n, err := e.k.nodes.Get(testNode)
		return err == nil && len(n.Status.VolumesAttached) == 1
	})
	d, ok := requeuedAfter(e.sync("default/app"))
	if want := podWorkerBackOff - time.Second; !ok || d != want {
		t.Fatalf("in the backoff: requeue after %v, want %v", d, want)
	}
	if calls := e.node.lifecycle(); len(calls) != 2 {
		t.Errorf("calls %v: the volume manager mounts meanwhile", calls)
	}
	if p := e.apiPod(); p.Status.Phase != corev1.PodPending {
		t.Fatalf("phase %s in the backoff", p.Status.Phase)
	}
	e.clock.Step(d)
	if err := e.syncAndWait("the pod Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }); err != nil {
		t.Fatal(err)
	}
	if got := e.mountFailures(); len(got) != 0 {
		t.Errorf("events %v: v1.37 records none for a timeout", got)
	}
}

// A pod with init containers initializes: PodInitializing until its
// sandbox is up, then its init container completed and its sidecar
// running beside the container.
func TestStatusWithInitContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	e := statusEnv(t, true, func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"},
			{Name: "proxy", Image: "envoy", RestartPolicy: &always}}
	})
	_ = e.syncAndWait("the PodInitializing status", func(p *corev1.Pod) bool { return len(p.Status.ContainerStatuses) > 0 })
	s := e.apiPod().Status
	for _, cs := range append(s.InitContainerStatuses, s.ContainerStatuses...) {
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != "PodInitializing" {
			t.Errorf("%s: state %+v, want waiting PodInitializing", cs.Name, cs.State)
		}
	}
	if names := []string{s.InitContainerStatuses[0].Name, s.InitContainerStatuses[1].Name}; names[0] != "setup" || names[1] != "proxy" {
		t.Errorf("init container statuses in order %v, want the spec's", names)
	}
	conds := map[corev1.PodConditionType]corev1.PodCondition{}
	for _, c := range s.Conditions {
		conds[c.Type] = c
	}
	if c := conds[corev1.PodInitialized]; c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotInitialized" ||
		c.Message != "containers with incomplete status: [setup proxy]" {
		t.Errorf("Initialized %+v", c)
	}
	if c := conds[corev1.PodReady]; c.Message != "containers with unready status: [proxy app]" {
		t.Errorf("Ready %+v", c)
	}

	e2 := statusEnv(t, false, func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"},
			{Name: "proxy", Image: "envoy", RestartPolicy: &always}}
	})
	e2.syncUntilRunning()
	s = e2.apiPod().Status
	setup, proxy := s.InitContainerStatuses[0], s.InitContainerStatuses[1]
	if setup.State.Terminated == nil || setup.State.Terminated.Reason != "Completed" || setup.State.Terminated.ExitCode != 0 ||
		!setup.Ready || *setup.Started {
		t.Errorf("setup %+v", setup)
	}
	if proxy.State.Running == nil || !proxy.Ready || !*proxy.Started {
		t.Errorf("proxy %+v", proxy)
	}
	for _, c := range s.Conditions {
		if c.Status != corev1.ConditionTrue {
			t.Errorf("condition %+v", c)
		}
	}
}

// A restarted kubelet has new pod workers: the wait starts again.
func TestRestartForgetsTheWait(t *testing.T) {
	e := statusEnv(t, true, nil)
	_ = e.syncAndWait("the ContainerCreating status", func(p *corev1.Pod) bool { return len(p.Status.ContainerStatuses) > 0 })
	e.clock.Step(podAttachAndMountTimeout + time.Second)
	_ = e.sync("default/app")
	e.k.podWorkers.mu.Lock()
	backingOff := !e.k.podWorkers.attempts[e.pod.UID].retryAt.IsZero()
	e.k.podWorkers.mu.Unlock()
	if !backingOff {
		t.Fatal("no backoff after the timeout")
	}
	e.k.podWorkers.reset()
	e.k.statuses.reset()
	e.k.network.reset()
	_ = e.sync("default/app")
	e.k.podWorkers.mu.Lock()
	s := *e.k.podWorkers.attempts[e.pod.UID]
	e.k.podWorkers.mu.Unlock()
	if !s.retryAt.IsZero() || !s.start.Equal(e.clock.Now()) {
		t.Errorf("after a restart: %+v, want an attempt begun now", s)
	}
	if patches := e.podStatusPatches(); len(patches) != 1 {
		t.Errorf("status patches %q: a restarted kubelet posts the same status again", patches)
	}
}

func TestPodSyncRoll(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cycle := podAttachAndMountTimeout + podWorkerBackOff
	tests := []struct {
		name        string
		s           podSync
		now         time.Time
		wantStart   time.Time
		wantRetryAt time.Time
	}{
		{"within the first attempt", podSync{start: t0}, t0.Add(time.Minute), t0, time.Time{}},
		{"timed out: backing off", podSync{start: t0}, t0.Add(podAttachAndMountTimeout), t0, t0.Add(cycle)},
		{"the second attempt", podSync{start: t0}, t0.Add(cycle), t0.Add(cycle), time.Time{}},
		{"three attempts later", podSync{start: t0}, t0.Add(3*cycle + time.Second), t0.Add(3 * cycle), time.Time{}},
		{"after a failed attempt", podSync{start: t0, retryAt: t0.Add(time.Second)}, t0.Add(2 * time.Second),
			t0.Add(time.Second), time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			s.roll(tc.now)
			if !s.start.Equal(tc.wantStart) || !s.retryAt.Equal(tc.wantRetryAt) {
				t.Errorf("got start %v retryAt %v, want %v and %v", s.start, s.retryAt, tc.wantStart, tc.wantRetryAt)
			}
		})
	}
}
