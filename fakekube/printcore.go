package fakekube

// Printers of the core group's kinds (and of events.k8s.io events and leases):
// kubernetes pkg/printers/internalversion/printers.go's rules for each.

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// corePrinters prints the core group's kinds, events of both groups, and
// leases.
func corePrinters() map[schema.GroupKind]kindPrinter {
	name, age, col := nameColumn, ageColumn, column
	podDoc, podStatusDoc := corev1.PodSpec{}.SwaggerDoc(), corev1.PodStatus{}.SwaggerDoc()
	nodeInfoDoc := corev1.NodeSystemInfo{}.SwaggerDoc()
	nodeAddrDoc := corev1.NodeStatus{}.SwaggerDoc()["addresses"]
	eventDoc := corev1.Event{}.SwaggerDoc()

	eventPrinter := printerFor([]metav1.TableColumnDefinition{
		col("Last Seen", "string", eventDoc["lastTimestamp"]),
		col("Type", "string", eventDoc["type"]),
		col("Reason", "string", eventDoc["reason"]),
		col("Object", "string", eventDoc["involvedObject"]),
		wide(col("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"])),
		wide(col("Source", "string", eventDoc["source"])),
		col("Message", "string", eventDoc["message"]),
		wide(col("First Seen", "string", eventDoc["firstTimestamp"])),
		wide(col("Count", "string", eventDoc["count"])),
		wide(name),
	}, printEvent)

	return map[schema.GroupKind]kindPrinter{
		{Kind: "Pod"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
			col("Status", "string", "The aggregate status of the containers in this pod."),
			col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
			age,
			wide(col("IP", "string", podStatusDoc["podIP"])),
			wide(col("Node", "string", podDoc["nodeName"])),
			wide(col("Nominated Node", "string", podStatusDoc["nominatedNodeName"])),
			wide(col("Readiness Gates", "string", podDoc["readinessGates"])),
		}, printPod),
		{Kind: "Node"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Status", "string", "The status of the node"),
			col("Roles", "string", "The roles of the node"),
			age,
			col("Version", "string", nodeInfoDoc["kubeletVersion"]),
			wide(col("Internal-IP", "string", nodeAddrDoc)),
			wide(col("External-IP", "string", nodeAddrDoc)),
			wide(col("OS-Image", "string", nodeInfoDoc["osImage"])),
			wide(col("Kernel-Version", "string", nodeInfoDoc["kernelVersion"])),
			wide(col("Container-Runtime", "string", nodeInfoDoc["containerRuntimeVersion"])),
		}, printNode),
		{Kind: "Event"}: eventPrinter,
		// The real server stores events.k8s.io events as core events and
		// prints them with the same printer.
		{Group: eventsv1.GroupName, Kind: "Event"}: {columns: eventPrinter.columns,
			row: func(pc *printContext, obj runtime.Object) metav1.TableRow {
				return printEvent(pc, coreEventOf(obj.(*eventsv1.Event)))
			}},
		{Kind: "Namespace"}: printerFor([]metav1.TableColumnDefinition{
			name, col("Status", "string", "The status of the namespace"), age,
		}, func(pc *printContext, ns *corev1.Namespace) metav1.TableRow {
			return cells(ns.Name, string(ns.Status.Phase), pc.age(ns.CreationTimestamp))
		}),
		{Kind: "Secret"}: printerFor([]metav1.TableColumnDefinition{
			name, col("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]), col("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]), age,
		}, printSecret),
		{Kind: "ServiceAccount"}: printerFor([]metav1.TableColumnDefinition{
			name, col("Secrets", "string", corev1.ServiceAccount{}.SwaggerDoc()["secrets"]), age,
		}, func(pc *printContext, sa *corev1.ServiceAccount) metav1.TableRow {
			return cells(sa.Name, int64(len(sa.Secrets)), pc.age(sa.CreationTimestamp))
		}),
		{Kind: "ConfigMap"}: printerFor([]metav1.TableColumnDefinition{
			name, col("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]), age,
		}, func(pc *printContext, cm *corev1.ConfigMap) metav1.TableRow {
			return cells(cm.Name, int64(len(cm.Data)+len(cm.BinaryData)), pc.age(cm.CreationTimestamp))
		}),
		{Group: coordinationv1.GroupName, Kind: "Lease"}: printerFor([]metav1.TableColumnDefinition{
			name, col("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]), age,
		}, func(pc *printContext, l *coordinationv1.Lease) metav1.TableRow {
			return cells(l.Name, derefOr(l.Spec.HolderIdentity, ""), pc.age(l.CreationTimestamp))
		}),
	}
}

var (
	podSucceededConditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue,
		Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	podFailedConditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue,
		Reason: string(corev1.PodFailed), Message: "The pod failed."}}
)

// printPod computes READY, STATUS and RESTARTS the way the real printer
// does: STATUS starts from the phase (or status.reason), is replaced by the
// state of the first init container that has not finished, else by the
// waiting or terminated reason of the containers (the first container wins,
// as they are walked from the last), and becomes Terminating once the pod
// has a deletionTimestamp and has not finished.
func printPod(pc *printContext, pod *corev1.Pod) metav1.TableRow {
	row := metav1.TableRow{}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		row.Conditions = podSucceededConditions
	case corev1.PodFailed:
		row.Conditions = podFailedConditions
	}
	sidecars, total := podSidecars(pod)
	t := podTally{reason: podPhaseReason(pod), sidecars: sidecars}
	if initializing := t.countInitContainers(pod); !initializing || podConditionTrue(pod, corev1.PodInitialized) {
		t.countContainers(pod)
	}
	reason := podTerminatingReason(pod, t.reason)

	restartsCell := strconv.Itoa(t.restarts)
	if t.restarts != 0 && !t.lastRestart.IsZero() {
		restartsCell = fmt.Sprintf("%d (%s ago)", t.restarts, pc.age(metav1.NewTime(t.lastRestart)))
	}
	row.Cells = []any{pod.Name, fmt.Sprintf("%d/%d", t.ready, total), reason, restartsCell, pc.age(pod.CreationTimestamp),
		orNone(podIP(pod)), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), podReadinessGates(pod)}
	return row
}

// podPhaseReason is where STATUS starts: the phase, or status.reason, or
// SchedulingGated.
func podPhaseReason(pod *corev1.Pod) string {
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}
	return reason
}

// podSidecars names the init containers that restart always (sidecars),
// and counts the containers READY counts: the containers and the sidecars.
func podSidecars(pod *corev1.Pod) (map[string]bool, int) {
	total := len(pod.Spec.Containers)
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			total++
		}
	}
	return sidecars, total
}

// podTally is what the walk over a pod's container statuses adds up.
type podTally struct {
	reason   string
	sidecars map[string]bool

	ready, restarts, sidecarRestarts int
	lastRestart, lastSidecarRestart  time.Time
}

// laterRestart is cur, or the time cs last terminated if that is later.
func laterRestart(cur time.Time, cs corev1.ContainerStatus) time.Time {
	if t := cs.LastTerminationState.Terminated; t != nil && cur.Before(t.FinishedAt.Time) {
		return t.FinishedAt.Time
	}
	return cur
}

// countInitContainers walks the init containers up to the first that has
// not finished (a started sidecar has), taking STATUS from it; it reports
// whether there was one.
func (t *podTally) countInitContainers(pod *corev1.Pod) bool {
	for i, cs := range pod.Status.InitContainerStatuses {
		t.restarts += int(cs.RestartCount)
		t.lastRestart = laterRestart(t.lastRestart, cs)
		if t.sidecars[cs.Name] {
			t.sidecarRestarts += int(cs.RestartCount)
			t.lastSidecarRestart = laterRestart(t.lastSidecarRestart, cs)
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case t.sidecars[cs.Name] && cs.Started != nil && *cs.Started:
			if cs.Ready {
				t.ready++
			}
			continue
		case cs.State.Terminated != nil:
			t.reason = "Init:" + terminatedReason(cs.State.Terminated)
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != podInitializingReason:
			t.reason = "Init:" + cs.State.Waiting.Reason
		default:
			t.reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		return true
	}
	return false
}

// countContainers walks the containers from the last, so that the first
// one's waiting or terminated reason is STATUS; restarts count the
// sidecars' and the containers'.
func (t *podTally) countContainers(pod *corev1.Pod) {
	t.restarts, t.lastRestart = t.sidecarRestarts, t.lastSidecarRestart
	running := false
	for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
		cs := pod.Status.ContainerStatuses[i]
		t.restarts += int(cs.RestartCount)
		t.lastRestart = laterRestart(t.lastRestart, cs)
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			t.reason = cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			t.reason = terminatedReason(cs.State.Terminated)
		case cs.Ready && cs.State.Running != nil:
			running = true
			t.ready++
		}
	}
	// A pod whose containers partly completed while others still run
	// is not Completed.
	if t.reason == "Completed" && running {
		t.reason = "NotReady"
		if podConditionTrue(pod, corev1.PodReady) {
			t.reason = "Running"
		}
	}
}

// podTerminatingReason is STATUS for a pod being deleted: Unknown on a
// lost node, Terminating unless it finished; reason otherwise.
func podTerminatingReason(pod *corev1.Pod, reason string) string {
	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == nodeUnreachablePodReason:
			reason = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			reason = "Terminating"
		}
	}
	return reason
}

// podIP is the pod's first IP. The real server converts status.podIP into
// status.podIPs when only the former is written; the printer reads the
// latter.
func podIP(pod *corev1.Pod) string {
	if len(pod.Status.PodIPs) > 0 {
		return pod.Status.PodIPs[0].IP
	}
	return pod.Status.PodIP
}

// podReadinessGates is READINESS GATES: passed/all, or <none>.
func podReadinessGates(pod *corev1.Pod) string {
	n := len(pod.Spec.ReadinessGates)
	if n == 0 {
		return "<none>"
	}
	passed := 0
	for _, g := range pod.Spec.ReadinessGates {
		if podConditionTrue(pod, g.ConditionType) {
			passed++
		}
	}
	return fmt.Sprintf("%d/%d", passed, n)
}

// terminatedReason is a terminated container's reason, or its signal or
// exit code when it has none.
func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

// podConditionTrue reports whether the first condition of the type is True.
func podConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// printNode: STATUS is Ready or NotReady from the Ready condition (Unknown
// without one), plus SchedulingDisabled for a cordoned node; ROLES come from
// node-role.kubernetes.io/<role> labels and the kubernetes.io/role label.
func printNode(pc *printContext, node *corev1.Node) metav1.TableRow {
	var status []string
	var readyCond *corev1.NodeCondition
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			readyCond = &node.Status.Conditions[i] // the last one counts
		}
	}
	switch {
	case readyCond == nil:
		status = append(status, "Unknown")
	case readyCond.Status == corev1.ConditionTrue:
		status = append(status, string(corev1.NodeReady))
	default:
		status = append(status, "Not"+string(corev1.NodeReady))
	}
	if node.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}

	var roles []string
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, nodeRoleLabelPrefix) && len(k) > len(nodeRoleLabelPrefix):
			roles = append(roles, strings.TrimPrefix(k, nodeRoleLabelPrefix))
		case k == nodeRoleLabel && v != "":
			roles = append(roles, v)
		}
	}
	sort.Strings(roles)
	roles = slices.Compact(roles)

	address := func(t corev1.NodeAddressType) string {
		for _, a := range node.Status.Addresses {
			if a.Type == t {
				return a.Address
			}
		}
		return "<none>"
	}
	info := node.Status.NodeInfo
	return cells(node.Name, strings.Join(status, ","), orNone(strings.Join(roles, ",")), pc.age(node.CreationTimestamp),
		info.KubeletVersion, address(corev1.NodeInternalIP), address(corev1.NodeExternalIP),
		orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion))
}

// printEvent: LAST SEEN falls back to the first time, and both to the
// eventTime of events written through events.k8s.io; a series overrides the
// last time and the count; OBJECT is kind/name in lower case.
func printEvent(pc *printContext, ev *corev1.Event) metav1.TableRow {
	first := pc.age(ev.FirstTimestamp)
	if ev.FirstTimestamp.IsZero() {
		first = pc.microAge(ev.EventTime)
	}
	last := pc.age(ev.LastTimestamp)
	if ev.LastTimestamp.IsZero() {
		last = first
	}
	count := ev.Count
	if ev.Series != nil {
		last = pc.microAge(ev.Series.LastObservedTime)
		count = ev.Series.Count
	} else if count == 0 {
		count = 1 // a singleton event written through events.k8s.io
	}
	target := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		target += "/" + ev.InvolvedObject.Name
	}
	source := cmp.Or(ev.Source.Component, ev.ReportingController)
	if host := cmp.Or(ev.Source.Host, ev.ReportingInstance); host != "" {
		source += ", " + host
	}
	return cells(last, ev.Type, ev.Reason, target, ev.InvolvedObject.FieldPath, source,
		strings.TrimSpace(ev.Message), first, int64(count), ev.Name)
}

// coreEventOf is an events.k8s.io event as the core event the real server
// stores it as.
func coreEventOf(e *eventsv1.Event) *corev1.Event {
	ev := &corev1.Event{
		ObjectMeta:          e.ObjectMeta,
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		Related:             e.Related,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		ev.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return ev
}

func printSecret(pc *printContext, s *corev1.Secret) metav1.TableRow {
	// stringData is write-only on a real server: it is merged into data.
	keys := len(s.Data)
	for k := range s.StringData {
		if _, dup := s.Data[k]; !dup {
			keys++
		}
	}
	return cells(s.Name, string(s.Type), int64(keys), pc.age(s.CreationTimestamp))
}
