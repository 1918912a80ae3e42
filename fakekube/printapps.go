package fakekube

// Printers of the apps group's kinds.

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// appsPrinters prints the apps group's kinds.
func appsPrinters() map[schema.GroupKind]kindPrinter {
	name, age, col := nameColumn, ageColumn, column
	return map[schema.GroupKind]kindPrinter{
		{Group: appsv1.GroupName, Kind: "StatefulSet"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Ready", "string", "Number of the pod with ready state"),
			age,
			wide(col("Containers", "string", "Names of each container in the template.")),
			wide(col("Images", "string", "Images referenced by each container in the template.")),
		}, printStatefulSet),
		// kubernetes pkg/printers/internalversion/printers.go: deployment-,
		// replicaSet- and controllerRevisionColumnDefinitions.
		{Group: appsv1.GroupName, Kind: "Deployment"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Ready", "string", "Number of the pod with ready state"),
			col("Up-to-date", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
			col("Available", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
			age,
			wide(col("Containers", "string", "Names of each container in the template.")),
			wide(col("Images", "string", "Images referenced by each container in the template.")),
			wide(col("Selector", "string", appsv1.DeploymentSpec{}.SwaggerDoc()["selector"])),
		}, printDeployment),
		{Group: appsv1.GroupName, Kind: "ReplicaSet"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Desired", "integer", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
			col("Current", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
			col("Ready", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
			age,
			wide(col("Containers", "string", "Names of each container in the template.")),
			wide(col("Images", "string", "Images referenced by each container in the template.")),
			wide(col("Selector", "string", appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"])),
		}, printReplicaSet),
		// kubernetes pkg/printers/internalversion/printers.go:
		// daemonSetColumnDefinitions.
		{Group: appsv1.GroupName, Kind: "DaemonSet"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Desired", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]),
			col("Current", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]),
			col("Ready", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]),
			col("Up-to-date", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]),
			col("Available", "integer", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]),
			col("Node Selector", "string", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
			age,
			wide(col("Containers", "string", "Names of each container in the template.")),
			wide(col("Images", "string", "Images referenced by each container in the template.")),
			wide(col("Selector", "string", appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"])),
		}, printDaemonSet),
		{Group: appsv1.GroupName, Kind: "ControllerRevision"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Controller", "string", "Controller of the object"),
			col("Revision", "integer", appsv1.ControllerRevision{}.SwaggerDoc()["revision"]),
			age,
		}, printControllerRevision),
	}
}

func printStatefulSet(pc *printContext, sts *appsv1.StatefulSet) metav1.TableRow {
	var names, images []string
	for _, c := range sts.Spec.Template.Spec.Containers {
		names, images = append(names, c.Name), append(images, c.Image)
	}
	// spec.replicas defaults to 1 on a real server.
	desired := derefOr(sts.Spec.Replicas, 1)
	return cells(sts.Name, fmt.Sprintf("%d/%d", sts.Status.ReadyReplicas, desired), pc.age(sts.CreationTimestamp),
		strings.Join(names, ","), strings.Join(images, ","))
}

// templateContainers are the wide columns' container names and images.
func templateContainers(t corev1.PodTemplateSpec) (string, string) {
	var names, images []string
	for _, c := range t.Spec.Containers {
		names, images = append(names, c.Name), append(images, c.Image)
	}
	return strings.Join(names, ","), strings.Join(images, ",")
}

// selectorString prints a label selector as the real printers do.
func selectorString(sel *metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "<invalid>"
	}
	return s.String()
}

func printDeployment(pc *printContext, d *appsv1.Deployment) metav1.TableRow {
	names, images := templateContainers(d.Spec.Template)
	return cells(d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, derefOr(d.Spec.Replicas, 1)),
		int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas), pc.age(d.CreationTimestamp),
		names, images, selectorString(d.Spec.Selector))
}

func printReplicaSet(pc *printContext, rs *appsv1.ReplicaSet) metav1.TableRow {
	names, images := templateContainers(rs.Spec.Template)
	return cells(rs.Name, int64(derefOr(rs.Spec.Replicas, 1)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
		pc.age(rs.CreationTimestamp), names, images, selectorString(rs.Spec.Selector))
}

func printDaemonSet(pc *printContext, ds *appsv1.DaemonSet) metav1.TableRow {
	names, images := templateContainers(ds.Spec.Template)
	st := ds.Status
	return cells(ds.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
		int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
		pc.age(ds.CreationTimestamp), names, images, selectorString(ds.Spec.Selector))
}

// printControllerRevision names the controller as kind.group/name.
func printControllerRevision(pc *printContext, cr *appsv1.ControllerRevision) metav1.TableRow {
	controller := "<none>"
	if ref := metav1.GetControllerOf(cr); ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil {
			gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
			controller = strings.ToLower(gk.String()) + "/" + ref.Name
		}
	}
	return cells(cr.Name, controller, cr.Revision, pc.age(cr.CreationTimestamp))
}
