package kubelet

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
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
		if e.apiPod().Status.Phase == corev1.PodRunning {
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
