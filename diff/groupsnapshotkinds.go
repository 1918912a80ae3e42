package diff

import (
	"context"
	"fmt"
	"slices"
	"strings"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/internal/kubelist"
)

// GroupSnapshots are the groupsnapshot.storage.k8s.io kinds of a
// snapshot, from external-snapshotter's CRDs at v1.
type GroupSnapshots struct {
	VolumeGroupSnapshots        []groupv1.VolumeGroupSnapshot
	VolumeGroupSnapshotContents []groupv1.VolumeGroupSnapshotContent
	VolumeGroupSnapshotClasses  []groupv1.VolumeGroupSnapshotClass
}

// listGroupSnapshots lists the group snapshot kinds. A cluster that does
// not serve them (no CRDs) has none.
func listGroupSnapshots(ctx context.Context, cl Clients, opts metav1.ListOptions) (GroupSnapshots, error) {
	var g GroupSnapshots
	groups := cl.Snapshots.GroupsnapshotV1()
	err := kubelist.All(ctx, opts, []kubelist.Kind{
		kubelist.Into("VolumeGroupSnapshots", &g.VolumeGroupSnapshots, groups.VolumeGroupSnapshots("").List,
			func(l *groupv1.VolumeGroupSnapshotList) []groupv1.VolumeGroupSnapshot { return l.Items }),
		kubelist.Into("VolumeGroupSnapshotContents", &g.VolumeGroupSnapshotContents, groups.VolumeGroupSnapshotContents().List,
			func(l *groupv1.VolumeGroupSnapshotContentList) []groupv1.VolumeGroupSnapshotContent { return l.Items }),
		kubelist.Into("VolumeGroupSnapshotClasses", &g.VolumeGroupSnapshotClasses, groups.VolumeGroupSnapshotClasses().List,
			func(l *groupv1.VolumeGroupSnapshotClassList) []groupv1.VolumeGroupSnapshotClass { return l.Items }),
	})
	if apierrors.IsNotFound(err) {
		return GroupSnapshots{}, nil
	}
	return g, err
}

// learnGroupSnapshots names what a group snapshot makes after the group:
// its content groupsnapcontent-<group uid>, the name the csi-snapshotter
// asks CreateVolumeGroupSnapshot for (groupsnapshot-<group uid>), the
// handles the driver returns, and the members — a VolumeSnapshot and a
// VolumeSnapshotContent per volume, named after hashes of the group
// content's UID and the volume's handle — after the claim each is of. It
// runs before the members are learnt as ordinary snapshots, and after the
// volumes, whose placeholders the members' names use.
func (n *Normaliser) learnGroupSnapshots(objs Objects) {
	for _, g := range objs.VolumeGroupSnapshots {
		group := qualified(g.Namespace, g.Name)
		n.set(string(g.UID), "<uid of volumegroupsnapshot "+group+">")
		n.set("groupsnapcontent-"+string(g.UID), "<content of volumegroupsnapshot "+group+">")
		n.set("groupsnapshot-"+string(g.UID), "<group snapshot of volumegroupsnapshot "+group+">")
	}
	for _, c := range objs.VolumeGroupSnapshotContents {
		ref := c.Spec.VolumeGroupSnapshotRef
		group := qualified(ref.Namespace, ref.Name)
		n.set(string(c.UID), "<uid of volumegroupsnapshotcontent "+n.name(c.Name)+">")
		if c.Spec.Source.GroupSnapshotHandles != nil || c.Status == nil {
			continue // pre-provisioned: the scenario wrote the handles
		}
		if h := c.Status.VolumeGroupSnapshotHandle; h != nil {
			n.set(*h, "<handle of volumegroupsnapshot "+group+">")
		}
		for _, m := range c.Status.VolumeSnapshotInfoList {
			n.set(m.SnapshotHandle, "<handle of the member of "+group+" for "+n.name(m.VolumeHandle)+">")
		}
	}
	for _, vs := range objs.VolumeSnapshots {
		st, src := vs.Status, vs.Spec.Source.PersistentVolumeClaimName
		if st == nil || st.VolumeGroupSnapshotName == nil || src == nil {
			continue
		}
		member := "<member of " + qualified(vs.Namespace, *st.VolumeGroupSnapshotName) + " for pvc " + qualified(vs.Namespace, *src) + ">"
		n.set(vs.Name, member)
		n.set(qualified(vs.Namespace, vs.Name), qualified(vs.Namespace, member))
	}
	for _, c := range objs.VolumeSnapshotContents {
		if c.Status == nil || c.Status.VolumeGroupSnapshotHandle == nil {
			continue
		}
		ref := c.Spec.VolumeSnapshotRef
		if _, member := n.names[ref.Name]; !member {
			// Its member is not known as one yet (its status does not
			// name the group): named from a later step's state, not
			// after the member's generated name for good.
			continue
		}
		n.set(c.Name, "<content of "+qualified(ref.Namespace, n.name(ref.Name))+">")
	}
}

// groupSnapshotObjects adds the group snapshot kinds to a snapshot: what
// `kubectl get` shows of them, their binding, members and errors.
func (n *Normaliser) groupSnapshotObjects(add func(Object), objs Objects) {
	for _, c := range objs.VolumeGroupSnapshotClasses {
		o := n.object("VolumeGroupSnapshotClass", c.ObjectMeta)
		setField(o.Fields, "driver", c.Driver)
		setField(o.Fields, "deletionPolicy", string(c.DeletionPolicy))
		add(o)
	}
	for _, g := range objs.VolumeGroupSnapshots {
		if slices.Contains(systemNamespaces, g.Namespace) {
			continue
		}
		o := n.object("VolumeGroupSnapshot", g.ObjectMeta)
		if s := g.Spec.Source.Selector; s != nil {
			setField(o.Fields, "source.selector", metav1.FormatLabelSelector(s))
		}
		if c := g.Spec.Source.VolumeGroupSnapshotContentName; c != nil {
			setField(o.Fields, "source.volumeGroupSnapshotContentName", n.name(*c))
		}
		if c := g.Spec.VolumeGroupSnapshotClassName; c != nil {
			setField(o.Fields, "volumeGroupSnapshotClassName", *c)
		}
		if st := g.Status; st != nil {
			if c := st.BoundVolumeGroupSnapshotContentName; c != nil {
				setField(o.Fields, "boundVolumeGroupSnapshotContentName", n.name(*c))
			}
			n.readiness(o.Fields, st.ReadyToUse, st.CreationTime != nil, st.Error)
		}
		add(o)
	}
	for _, c := range objs.VolumeGroupSnapshotContents {
		o := n.object("VolumeGroupSnapshotContent", c.ObjectMeta)
		ref := c.Spec.VolumeGroupSnapshotRef
		setField(o.Fields, "volumeGroupSnapshotRef", qualified(ref.Namespace, ref.Name))
		setField(o.Fields, "driver", c.Spec.Driver)
		setField(o.Fields, "deletionPolicy", string(c.Spec.DeletionPolicy))
		if cl := c.Spec.VolumeGroupSnapshotClassName; cl != nil {
			setField(o.Fields, "volumeGroupSnapshotClassName", *cl)
		}
		setField(o.Fields, "source.volumeHandles", n.sortedNames(c.Spec.Source.VolumeHandles))
		if st := c.Status; st != nil {
			if h := st.VolumeGroupSnapshotHandle; h != nil {
				setField(o.Fields, "volumeGroupSnapshotHandle", n.name(*h))
			}
			n.readiness(o.Fields, st.ReadyToUse, st.CreationTime != nil, st.Error)
			var members []string
			for _, m := range st.VolumeSnapshotInfoList {
				ready := m.ReadyToUse != nil && *m.ReadyToUse
				members = append(members, fmt.Sprintf("%s=%s ready=%t", n.name(m.VolumeHandle), n.name(m.SnapshotHandle), ready))
			}
			slices.Sort(members)
			setField(o.Fields, "volumeSnapshotInfoList", strings.Join(members, ", "))
		}
		add(o)
	}
}

// sortedNames are names' placeholders, sorted and joined.
func (n *Normaliser) sortedNames(names []string) string {
	out := make([]string, len(names))
	for i, s := range names {
		out[i] = n.name(s)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// readiness records a group snapshot's or its content's readiness, as
// their status shows it: ready or not, created or not, and the error.
func (n *Normaliser) readiness(fields map[string]string, ready *bool, created bool, err *snapv1.VolumeSnapshotError) {
	if ready != nil {
		fields["readyToUse"] = fmt.Sprint(*ready)
	}
	if created {
		fields["creationTime"] = "set"
	}
	if err != nil && err.Message != nil {
		setField(fields, "error", n.value(*err.Message))
	}
}
