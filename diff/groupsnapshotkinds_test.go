package diff

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/trace"
)

// groupWorld is one cluster's group snapshot of two claims: the names,
// UIDs and handles it generated.
type groupWorld struct {
	groupUID, groupHandle string
	claimUIDs, volumes    [2]string
	members, handles      [2]string // member VolumeSnapshot names, the driver's member handles
}

func (w groupWorld) objects() Objects {
	ready, group, class := true, "web-snaps", "csisim-groupsnapclass"
	content := "groupsnapcontent-" + w.groupUID
	var o Objects
	var infos []groupv1.VolumeSnapshotInfo
	for i, claim := range []string{"data-web-0", "data-web-1"} {
		o.PVCs = append(o.PVCs, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: "default", UID: types.UID(w.claimUIDs[i])}})
		o.PVs = append(o.PVs, corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + w.claimUIDs[i]},
			Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: claim},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{VolumeHandle: w.volumes[i]}}}})
		infos = append(infos, groupv1.VolumeSnapshotInfo{VolumeHandle: w.volumes[i], SnapshotHandle: w.handles[i], ReadyToUse: &ready})
		memberContent := "snapcontent-" + w.members[i][len("snapshot-"):]
		o.VolumeSnapshots = append(o.VolumeSnapshots, snapv1.VolumeSnapshot{
			ObjectMeta: metav1.ObjectMeta{Name: w.members[i], Namespace: "default", UID: types.UID(fmt.Sprintf("%s-%d", w.groupUID[:30], i)),
				OwnerReferences: []metav1.OwnerReference{{Kind: "VolumeGroupSnapshot", Name: group}}},
			Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: &claim}},
			Status: &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: &memberContent, ReadyToUse: &ready,
				VolumeGroupSnapshotName: &group}})
		o.VolumeSnapshotContents = append(o.VolumeSnapshotContents, snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: memberContent},
			Spec: snapv1.VolumeSnapshotContentSpec{Driver: "hostpath.csisim.io", DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
				VolumeSnapshotRef: corev1.ObjectReference{Namespace: "default", Name: w.members[i]},
				Source:            snapv1.VolumeSnapshotContentSource{SnapshotHandle: &w.handles[i]}},
			Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: &w.handles[i], ReadyToUse: &ready, VolumeGroupSnapshotHandle: &w.groupHandle}})
	}
	o.VolumeGroupSnapshotClasses = []groupv1.VolumeGroupSnapshotClass{{ObjectMeta: metav1.ObjectMeta{Name: class}, Driver: "hostpath.csisim.io", DeletionPolicy: snapv1.VolumeSnapshotContentDelete}}
	o.VolumeGroupSnapshots = []groupv1.VolumeGroupSnapshot{{ObjectMeta: metav1.ObjectMeta{Name: group, Namespace: "default", UID: types.UID(w.groupUID)},
		Spec:   groupv1.VolumeGroupSnapshotSpec{Source: groupv1.VolumeGroupSnapshotSource{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}, VolumeGroupSnapshotClassName: &class},
		Status: &groupv1.VolumeGroupSnapshotStatus{BoundVolumeGroupSnapshotContentName: &content, ReadyToUse: &ready}}}
	o.VolumeGroupSnapshotContents = []groupv1.VolumeGroupSnapshotContent{{ObjectMeta: metav1.ObjectMeta{Name: content},
		Spec: groupv1.VolumeGroupSnapshotContentSpec{VolumeGroupSnapshotRef: corev1.ObjectReference{Namespace: "default", Name: group, UID: types.UID(w.groupUID)},
			Driver: "hostpath.csisim.io", DeletionPolicy: snapv1.VolumeSnapshotContentDelete, VolumeGroupSnapshotClassName: &class,
			Source: groupv1.VolumeGroupSnapshotContentSource{VolumeHandles: w.volumes[:]}},
		Status: &groupv1.VolumeGroupSnapshotContentStatus{VolumeGroupSnapshotHandle: &w.groupHandle, ReadyToUse: &ready, VolumeSnapshotInfoList: infos}}}
	return o
}

func (w groupWorld) calls() []trace.Entry {
	return []trace.Entry{{Kind: trace.CSI, Verb: "CreateVolumeGroupSnapshot", Object: "groupsnapshot-" + w.groupUID}}
}

var (
	simGroup = groupWorld{groupUID: "11111111-aaaa-bbbb-cccc-000000000001", groupHandle: "group-sim",
		claimUIDs: [2]string{"11111111-aaaa-bbbb-cccc-000000000002", "11111111-aaaa-bbbb-cccc-000000000003"},
		volumes:   [2]string{"vol-sim-0", "vol-sim-1"}, members: [2]string{"snapshot-aaa0", "snapshot-aaa1"}, handles: [2]string{"snap-sim-0", "snap-sim-1"}}
	realGroup = groupWorld{groupUID: "22222222-aaaa-bbbb-cccc-000000000001", groupHandle: "group-real",
		claimUIDs: [2]string{"22222222-aaaa-bbbb-cccc-000000000002", "22222222-aaaa-bbbb-cccc-000000000003"},
		volumes:   [2]string{"vol-real-0", "vol-real-1"}, members: [2]string{"snapshot-bbb0", "snapshot-bbb1"}, handles: [2]string{"snap-real-0", "snap-real-1"}}
)

// A group snapshot's content, its handles and its members — named after
// hashes, UIDs and what the driver returned — become placeholders named
// after the group and the claims, so two clusters' group snapshots
// compare, and the group kinds are in the snapshot.
func TestGroupSnapshotKindsNormalise(t *testing.T) {
	sim := NewNormaliser().Snapshot(simGroup.objects(), simGroup.calls())
	real := NewNormaliser().Snapshot(realGroup.objects(), realGroup.calls())
	if !sim.Equal(real) {
		t.Fatalf("snapshots differ:\n%v", Compare([]Snapshot{sim}, []Snapshot{real}, nil, nil))
	}
	member := "default/<member of default/web-snaps for pvc default/data-web-0>"
	for key, fields := range map[string]map[string]string{
		"VolumeGroupSnapshot default/web-snaps": {"boundVolumeGroupSnapshotContentName": "<content of volumegroupsnapshot default/web-snaps>",
			"source.selector": "app=web", "readyToUse": "true"},
		"VolumeGroupSnapshotContent <content of volumegroupsnapshot default/web-snaps>": {
			"volumeGroupSnapshotHandle": "<handle of volumegroupsnapshot default/web-snaps>",
			"source.volumeHandles":      "<volume of default/data-web-0>, <volume of default/data-web-1>"},
		"VolumeSnapshot " + member:                          {"source.persistentVolumeClaimName": "data-web-0"},
		"VolumeSnapshotContent <content of " + member + ">": {"volumeSnapshotRef": member},
	} {
		o, ok := sim.Objects[key]
		if !ok {
			t.Errorf("no %s in %v", key, keys(sim.Objects))
			continue
		}
		for f, want := range fields {
			if o.Fields[f] != want {
				t.Errorf("%s: %s = %q, want %q", key, f, o.Fields[f], want)
			}
		}
	}
	if got := sim.CSICalls["<group snapshot of volumegroupsnapshot default/web-snaps>"]; len(got) != 1 {
		t.Errorf("CSI calls %v", sim.CSICalls)
	}
}

// A member content made before its status names its group (as a fast
// snapshot-controller has it by the end of the group's step), or before its
// member's status does, shows under the placeholder the later steps teach,
// not its generated name nor one made of its member's.
func TestSnapshotsLearnFromLaterSteps(t *testing.T) {
	tests := []struct {
		name  string
		early func(o *Objects)
	}{
		{"the content without a status, no members yet", func(o *Objects) {
			for i := range o.VolumeSnapshotContents {
				o.VolumeSnapshotContents[i].Status = nil
			}
			o.VolumeSnapshots = nil
		}},
		{"the members' status without the group", func(o *Objects) {
			for i := range o.VolumeSnapshots {
				o.VolumeSnapshots[i].Status.VolumeGroupSnapshotName = nil
			}
		}},
	}
	contents := func(s Snapshot) []string {
		var out []string
		for key := range s.Objects {
			if strings.HasPrefix(key, "VolumeSnapshotContent ") {
				out = append(out, key)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			early := simGroup.objects()
			tc.early(&early)
			snaps := snapshotsOf(NewNormaliser(), []markedState{
				{mark: stepMark{step: scenarios.StepResult{Step: 1, Name: "the group"}}, objects: early, calls: simGroup.calls()},
				{mark: stepMark{step: scenarios.StepResult{Step: 2, Name: "wait"}}, objects: simGroup.objects(), calls: simGroup.calls()},
			})
			first, second := contents(snaps[0]), contents(snaps[1])
			if len(first) != 2 || !slices.Equal(first, second) || strings.Contains(strings.Join(second, " "), "snapshot-aaa") {
				t.Errorf("member contents at step 1 %q, at step 2 %q: want the same placeholders, after the members'", first, second)
			}
			if snaps[0].Step != 1 || snaps[1].StepName != "wait" {
				t.Errorf("steps %d %q, %d %q", snaps[0].Step, snaps[0].StepName, snaps[1].Step, snaps[1].StepName)
			}
		})
	}
}
