package diff

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csisim/csisim/sim/volumeutil"
	"github.com/csisim/csisim/trace"
)

// world is one cluster's view of the basic lifecycle with a claim, its
// PV, an attachment and a mounted pod, under the names and UIDs that
// cluster generated.
type world struct {
	claimUID, handle, vaName, podUID string
	identity                         string // csiProvisionerIdentity
	host                             string // the machine's host name
}

func (w world) objects() Objects {
	pvName := "pvc-" + w.claimUID
	sc := "csisim-sc"
	unique := corev1.UniqueVolumeName("kubernetes.io/csi/hostpath.csisim.io^" + w.handle)
	now := metav1.Now()
	return Objects{
		PVCs: []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: types.UID(w.claimUID),
				Finalizers: []string{"kubernetes.io/pvc-protection"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "scenario", Operation: metav1.ManagedFieldsOperationUpdate},
					{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
					{Manager: "scenario", Operation: metav1.ManagedFieldsOperationUpdate, Time: &now}},
				Annotations: map[string]string{
					"kubectl.kubernetes.io/last-applied-configuration": `{"whatever":"` + w.claimUID + `"}`,
					"pv.kubernetes.io/bind-completed":                  "yes",
				}},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pvName, StorageClassName: &sc},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Conditions: []corev1.PersistentVolumeClaimCondition{
				{Type: "Unused", Status: corev1.ConditionTrue, Reason: "NoPodsUsingPVC", Message: "No pods are currently referencing this PVC",
					LastTransitionTime: now}}},
		}},
		PVs: []corev1.PersistentVolume{{
			ObjectMeta: metav1.ObjectMeta{Name: pvName, UID: types.UID(w.claimUID[:8] + "-0000-0000-0000-000000000000"),
				Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "hostpath.csisim.io"},
				Finalizers:  []string{"kubernetes.io/pv-protection"}},
			Spec: corev1.PersistentVolumeSpec{
				ClaimRef:         &corev1.ObjectReference{Namespace: "default", Name: "data", UID: types.UID(w.claimUID)},
				StorageClassName: sc,
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: "hostpath.csisim.io", VolumeHandle: w.handle,
					VolumeAttributes: map[string]string{"storage.kubernetes.io/csiProvisionerIdentity": w.identity}}},
			},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
		}},
		Pods: []corev1.Pod{{
			ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: types.UID(w.podUID)},
			Spec:       corev1.PodSpec{NodeName: "node-1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, Reason: "", LastTransitionTime: now}},
				InitContainerStatuses: []corev1.ContainerStatus{
					{Name: "setup", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}},
					{Name: "proxy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
				// Out of order: a snapshot sorts containers by name.
				ContainerStatuses: []corev1.ContainerStatus{
					{Name: "web", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
					{Name: "app", ContainerID: "containerd://" + w.podUID, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}},
		}, {
			// The control plane's own: not the scenario's.
			ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		}},
		VolumeAttachments: []storagev1.VolumeAttachment{{
			ObjectMeta: metav1.ObjectMeta{Name: w.vaName, Finalizers: []string{"external-attacher/hostpath-csisim-io"}},
			Spec: storagev1.VolumeAttachmentSpec{Attacher: "hostpath.csisim.io", NodeName: "node-1",
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}},
			Status: storagev1.VolumeAttachmentStatus{Attached: true},
		}},
		Nodes: []corev1.Node{{
			ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/hostname": "node-1"}},
			Status: corev1.NodeStatus{VolumesAttached: []corev1.AttachedVolume{{Name: unique}}, VolumesInUse: []corev1.UniqueVolumeName{unique},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
					LastHeartbeatTime: now}}},
		}},
		Events: []corev1.Event{
			{ObjectMeta: metav1.ObjectMeta{Name: "data.1", Namespace: "default"}, Reason: "ProvisioningSucceeded",
				Message: "Successfully provisioned volume " + pvName, Count: 2,
				Source:         corev1.EventSource{Component: "hostpath.csisim.io_" + w.host + "_0f0f0f0f-1111-4222-8333-444455556666"},
				InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "data.2", Namespace: "default"}, Reason: "Provisioning", Message: "b",
				InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "data.3", Namespace: "default"}, Reason: "Provisioning", Message: "a",
				InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "pv.1", Namespace: "default"}, Reason: "VolumeDelete",
				InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolume", Name: pvName}},
			{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes.1", Namespace: "default"}, Reason: "KubernetesDefaultServiceCIDRError",
				InvolvedObject: corev1.ObjectReference{Kind: "ServiceCIDR", Name: "kubernetes"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "old.1", Namespace: "default"}, Reason: "Scheduled",
				ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-" + w.host,
				Series:         &corev1.EventSeries{Count: 4},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "gone"}},
		},
	}
}

func (w world) calls() []trace.Entry {
	return []trace.Entry{
		{Kind: trace.CSI, Verb: "GetPluginInfo"},
		{Kind: trace.CSI, Verb: "CreateVolume", Object: "pvc-" + w.claimUID + " -> " + w.handle},
		{Kind: trace.CSI, Verb: "ControllerPublishVolume", Object: w.handle},
		{Kind: trace.CSI, Verb: "NodeGetVolumeStats", Object: w.handle},
		{Kind: trace.API, Verb: "create", Object: "PersistentVolume x"},
	}
}

var (
	simWorld = world{claimUID: "2b0e6f4c-0000-4000-8000-000000000001", handle: "vol-aaaaaaaaaaaaaaaaaaaa",
		vaName: "csi-1111111111111111111111111111111111111111111111111111111111111111", podUID: "2b0e6f4c-0000-4000-8000-000000000002",
		identity: "1700000000000-1-hostpath.csisim.io", host: "sim-machine"}
	realWorld = world{claimUID: "9d7c1e55-0000-4000-8000-00000000000a", handle: "vol-bbbbbbbbbbbbbbbbbbbb",
		vaName: "csi-2222222222222222222222222222222222222222222222222222222222222222", podUID: "9d7c1e55-0000-4000-8000-00000000000b",
		identity: "1764451234567-8081-hostpath.csisim.io", host: "build-7"}
)

func TestSnapshotNormalises(t *testing.T) {
	s := NewNormaliser(simWorld.host).Snapshot(simWorld.objects(), simWorld.calls())
	tests := []struct {
		key  string
		want Object
	}{
		{"PersistentVolumeClaim default/data", Object{Kind: "PersistentVolumeClaim", Name: "default/data", Exists: true,
			Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"},
			Finalizers:  []string{"kubernetes.io/pvc-protection"}, Phase: "Bound",
			Conditions: map[string]string{"Unused": "True (NoPodsUsingPVC): No pods are currently referencing this PVC"},
			Fields:     map[string]string{"volumeName": "<pv of default/data>", "storageClassName": "csisim-sc"},
			Managers:   []string{"kube-controller-manager Update/status", "scenario Update"},
			Events: map[string]EventSummary{
				"Provisioning": {Messages: []string{"a", "b"}, Count: 2},
				"ProvisioningSucceeded": {Messages: []string{"Successfully provisioned volume <pv of default/data>"},
					Sources: []string{"hostpath.csisim.io_<host>_<uid>"}, Count: 2}}}},
		{"PersistentVolume <pv of default/data>", Object{Kind: "PersistentVolume", Name: "<pv of default/data>", Exists: true,
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "hostpath.csisim.io"},
			Finalizers:  []string{"kubernetes.io/pv-protection"}, Phase: "Bound",
			Fields: map[string]string{"claimRef": "default/data", "storageClassName": "csisim-sc",
				"csi.driver": "hostpath.csisim.io", "csi.volumeHandle": "<volume of default/data>",
				"csi.volumeAttributes.storage.kubernetes.io/csiProvisionerIdentity": "<time>-<n>-hostpath.csisim.io"},
			Events: map[string]EventSummary{"VolumeDelete": {Messages: []string{""}, Count: 1}}}},
		{"Pod default/app", Object{Kind: "Pod", Name: "default/app", Exists: true, Phase: "Running",
			Conditions: map[string]string{"PodScheduled": "True", "Ready": "True"}, Fields: map[string]string{"nodeName": "node-1",
				"initContainers": "setup=terminated(Completed), proxy=running",
				"containers":     "app=running, web=waiting(CrashLoopBackOff)"}}},
		{"Pod default/gone", Object{Kind: "Pod", Name: "default/gone", Events: map[string]EventSummary{
			"Scheduled": {Messages: []string{""}, Sources: []string{"default-scheduler/default-scheduler-<host>"}, Count: 4}}}},
		{"VolumeAttachment <attachment of <pv of default/data> to node-1>", Object{Kind: "VolumeAttachment",
			Name: "<attachment of <pv of default/data> to node-1>", Exists: true,
			Finalizers: []string{"external-attacher/hostpath-csisim-io"},
			Fields: map[string]string{"attacher": "hostpath.csisim.io", "nodeName": "node-1", "source": "<pv of default/data>",
				"attached": "true"}}},
		{"Node node-1", Object{Kind: "Node", Name: "node-1", Exists: true, Labels: map[string]string{"kubernetes.io/hostname": "node-1"},
			Conditions: map[string]string{"Ready": "True (KubeletReady)"},
			Fields: map[string]string{"volumesAttached": "kubernetes.io/csi/hostpath.csisim.io^<volume of default/data>",
				"volumesInUse": "kubernetes.io/csi/hostpath.csisim.io^<volume of default/data>"}}},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			got, ok := s.Objects[tc.key]
			if !ok {
				t.Fatalf("no %q in %v", tc.key, keys(s.Objects))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if len(s.Objects) != len(tests) {
		t.Errorf("objects %v, want only the %d above (no kube-system pod)", keys(s.Objects), len(tests))
	}
	wantCalls := map[string][]Call{"<volume of default/data>": {{Method: "CreateVolume"}, {Method: "ControllerPublishVolume"}}}
	if !reflect.DeepEqual(s.CSICalls, wantCalls) {
		t.Errorf("CSI calls %v, want %v", s.CSICalls, wantCalls)
	}
}

func keys(m map[string]Object) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Two clusters that did the same under different names and UIDs give the
// same snapshot.
func TestSnapshotsOfTwoClustersCompare(t *testing.T) {
	sim := NewNormaliser(simWorld.host).Snapshot(simWorld.objects(), simWorld.calls())
	real := NewNormaliser(realWorld.host).Snapshot(realWorld.objects(), realWorld.calls())
	if !sim.Equal(real) {
		t.Fatalf("snapshots differ:\n%v", Compare([]Snapshot{sim}, []Snapshot{real}, nil, nil))
	}
}

// A volume's placeholder outlives its PV: the calls made after the PV is
// gone are still the claim's.
func TestNormaliserRemembersNames(t *testing.T) {
	n := NewNormaliser()
	n.Snapshot(simWorld.objects(), simWorld.calls())
	calls := append(simWorld.calls(), trace.Entry{Kind: trace.CSI, Verb: "DeleteVolume", Object: simWorld.handle})
	s := n.Snapshot(Objects{}, calls)
	want := []Call{{Method: "CreateVolume"}, {Method: "ControllerPublishVolume"}, {Method: "DeleteVolume"}}
	if got := s.CSICalls["<volume of default/data>"]; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v (all: %v)", got, want, s.CSICalls)
	}
}

// CreateVolume names the claim's volume before the PV exists.
func TestCreateVolumeNamesTheHandle(t *testing.T) {
	objs := simWorld.objects()
	objs.PVs = nil
	s := NewNormaliser().Snapshot(objs, simWorld.calls())
	if _, ok := s.CSICalls["<volume of default/data>"]; !ok {
		t.Errorf("calls %v, want them under <volume of default/data>", s.CSICalls)
	}
}

func TestValueNormalisation(t *testing.T) {
	n := NewNormaliser()
	n.Snapshot(simWorld.objects(), nil)
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"pvc-" + simWorld.claimUID, "<pv of default/data>"},
		{simWorld.claimUID, "<uid of pvc default/data>"},
		{"owner " + simWorld.podUID + " here", "owner <uid of pod default/app> here"},
		{"deadbeef-0000-4000-8000-000000000000", "<uid>"},
		{"since 2026-11-29T21:28:45Z or 2026-11-29T21:28:45.123456+01:00", "since <time> or <time>"},
		{"1764451234567-8081-hostpath.csisim.io", "<time>-<n>-hostpath.csisim.io"},
		{"count 1764451234567", "count <n>"},
		{"port 8081", "port 8081"},
		{"kubernetes.io/csi/hostpath.csisim.io^" + simWorld.handle, "kubernetes.io/csi/hostpath.csisim.io^<volume of default/data>"},
		{"Successfully provisioned volume pvc-" + simWorld.claimUID, "Successfully provisioned volume <pv of default/data>"},
	}
	for _, tc := range tests {
		if got := n.value(tc.in); got != tc.want {
			t.Errorf("value(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestContainerStates(t *testing.T) {
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
	tests := []struct {
		name     string
		statuses []corev1.ContainerStatus
		sorted   bool
		want     string
	}{
		{name: "none"},
		{name: "creating", statuses: []corev1.ContainerStatus{{Name: "app", State: waiting("ContainerCreating")}},
			want: "app=waiting(ContainerCreating)"},
		{name: "running, terminated, waiting without a reason, no state", sorted: true, statuses: []corev1.ContainerStatus{
			{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}},
			{Name: "a", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "d", State: waiting("")},
			{Name: "b"}},
			want: "a=running, b=unknown, c=terminated(OOMKilled), d=waiting"},
		{name: "init containers keep their order", statuses: []corev1.ContainerStatus{
			{Name: "z", State: waiting("PodInitializing")}, {Name: "a", State: waiting("PodInitializing")}},
			want: "z=waiting(PodInitializing), a=waiting(PodInitializing)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := containerStates(tc.statuses, tc.sorted); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The kubelet's handle of an inline csi: volume is made of its pod's UID:
// its calls are the pod volume's on both clusters.
func TestInlineVolumeHandleNormalised(t *testing.T) {
	objs := simWorld.objects()
	pod := objs.Pods[0].DeepCopy()
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "scratch",
		VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "hostpath.csisim.io"}}})
	objs.Pods = []corev1.Pod{*pod}
	handle := volumeutil.InlineVolumeHandle(pod.UID, "scratch")
	calls := []trace.Entry{{Kind: trace.CSI, Verb: "NodePublishVolume", Object: handle}}
	s := NewNormaliser().Snapshot(objs, calls)
	if got := s.CSICalls["<inline volume scratch of pod default/app>"]; !slices.Equal(got, []Call{{Method: "NodePublishVolume"}}) {
		t.Errorf("calls %v, want them under the pod volume", s.CSICalls)
	}
}

// A pre-provisioned volume keeps the name and the handle the scenario
// gave it, whether a cluster is first looked at before its binding or
// after: one cluster binds it before the first snapshot, the other after.
func TestPreProvisionedVolumeKeepsItsNames(t *testing.T) {
	volume := func(bound bool) Objects {
		pv := corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", UID: "0a0a0a0a-0000-4000-8000-000000000001"},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: "missing.csi.example.com", VolumeHandle: "vol-elsewhere"}}}}
		if bound {
			pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "data"}
		}
		return Objects{PVs: []corev1.PersistentVolume{pv}}
	}
	calls := []trace.Entry{{Kind: trace.CSI, Verb: "NodeStageVolume", Object: "vol-elsewhere"}}
	early, late := NewNormaliser(), NewNormaliser()
	early.Snapshot(volume(false), nil)
	late.Snapshot(volume(true), nil)
	for name, n := range map[string]*Normaliser{"first seen unbound": early, "first seen bound": late} {
		s := n.Snapshot(volume(true), calls)
		if got := s.Objects["PersistentVolume elsewhere"].Fields["csi.volumeHandle"]; got != "vol-elsewhere" {
			t.Errorf("%s: handle %q, want vol-elsewhere", name, got)
		}
		if _, ok := s.CSICalls["vol-elsewhere"]; !ok {
			t.Errorf("%s: calls %v, want them under vol-elsewhere", name, s.CSICalls)
		}
	}
}

// An event's source loses the machine's host name and generated UIDs, and
// only where the host name is a whole part of the name.
func TestEventSourceNormalised(t *testing.T) {
	n := NewNormaliser("node7")
	for _, tc := range []struct {
		event corev1.Event
		want  string
	}{
		{corev1.Event{Source: corev1.EventSource{Component: "hostpath.csisim.io_node7_3f2504e0-4f89-41d3-9a0c-0305e82c3301"}},
			"hostpath.csisim.io_<host>_<uid>"},
		{corev1.Event{ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-node7"},
			"default-scheduler/default-scheduler-<host>"},
		{corev1.Event{Source: corev1.EventSource{Component: "kubelet", Host: "node-1"}}, "kubelet/node-1"},
		{corev1.Event{Source: corev1.EventSource{Component: "node77-controller"}}, "node77-controller"},
	} {
		if got := n.eventSource(tc.event); got != tc.want {
			t.Errorf("source of %+v: %q, want %q", tc.event, got, tc.want)
		}
	}
}

func TestNodeTaints(t *testing.T) {
	noExecute := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	noSchedule := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}
	outOfService := corev1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}
	both := "node.kubernetes.io/unreachable:NoExecute, node.kubernetes.io/unreachable:NoSchedule"
	tests := []struct {
		name   string
		taints []corev1.Taint
		want   string
	}{
		{name: "none"},
		{name: "one", taints: []corev1.Taint{noSchedule}, want: "node.kubernetes.io/unreachable:NoSchedule"},
		{name: "NoSchedule first", taints: []corev1.Taint{noSchedule, noExecute}, want: both},
		{name: "NoExecute first, the same", taints: []corev1.Taint{noExecute, noSchedule}, want: both},
		{name: "an administrator's taint among them", taints: []corev1.Taint{noExecute, outOfService, noSchedule},
			want: "node.kubernetes.io/out-of-service:NoExecute, " + both},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeTaints(tc.taints); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
