// Package csisimtest runs a simulated Kubernetes cluster with a real CSI
// driver inside a Go test, as net/http/httptest runs an HTTP server: a
// driver repository's Ginkgo suite (or a plain testing.T) starts one per
// spec from a driver profile, talks to it with client-go, injects faults
// and waits on it with Gomega matchers — on virtual time, so a wait of
// minutes costs no wall time and the same seed gives the same run.
//
// A first test, with csisim's in-memory mock driver:
//
//	func TestVolume(t *testing.T) {
//		c := csisimtest.Start(t, csisimtest.Options{Seed: 1})
//		objs := c.Apply(`
//	apiVersion: v1
//	kind: PersistentVolumeClaim
//	metadata: {name: data}
//	spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
//	---
//	apiVersion: v1
//	kind: Pod
//	metadata: {name: app}
//	spec:
//	  containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
//	  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
//	`)
//		pvc, pod := objs[0].(*corev1.PersistentVolumeClaim), objs[1].(*corev1.Pod)
//		c.Eventually(pod).Should(csisimtest.BeRunning())
//		c.Expect(pvc).To(csisimtest.HaveCSICalls("CreateVolume",
//			"ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"))
//		c.Expect(c).To(csisimtest.HaveNoInvariantViolations())
//	}
//
// examples/first-suite in csisim's repository is the same as a Ginkgo
// suite, ready to copy; examples/driver-suite runs a third-party driver.
//
// # Starting a cluster
//
// Start takes the test (a *testing.T, or Ginkgo's GinkgoT()) and Options:
// the driver profile (Options.Driver: a profile file in the driver's
// repository, or a profile csisim ships — "mock", the default, "csisim",
// "csi-test-mock"), the number of nodes (node-1, node-2, ...) and the
// seed. It starts the API server in process, the control plane's
// controllers, the sidecars and a kubelet per node, all on one virtual
// clock; the driver's own processes; and the driver's CSIDriver and a
// default StorageClass. When the test ends, t.Cleanup stops and removes
// all of it; a failed test's log gets the end of the cluster's timeline,
// which usually says why it failed. Clusters share nothing, so specs run
// in parallel (ginkgo -p); Prepare builds a driver once for a suite.
//
// # Objects
//
// Apply creates or replaces objects from YAML (or from Go values) and
// returns them typed, as the API server stored them: a Pod as a
// *corev1.Pod, a claim as a *corev1.PersistentVolumeClaim — every kind
// client-go knows; a CRD's kinds as *unstructured.Unstructured. Refresh
// reads objects again into themselves; Node reads a Node; Client and
// RESTConfig give client-go for anything else. Delete deletes as kubectl
// delete does (a pod goes once its kubelet has stopped it); ForceDelete as
// kubectl delete --force --grace-period=0 does.
//
// # Waiting, on virtual time
//
// Nothing happens in the cluster between the test's own calls: the
// cluster runs when an assertion runs it. Eventually(x).Should(m) runs it
// until m holds for x, Consistently(x) for as long as m must hold (the
// timeout, Options.Timeout or WithTimeout, is virtual time), RunFor for a
// while; Expect(x).To(m) asks once without running it. x is an object
// (read afresh at each look: what Apply returned, or any object naming
// one), the Cluster itself, or a function to call at each look.
//
// # Matchers
//
// This package's matchers look at the cluster, and say in their failure
// messages what they saw — a claim's phase and its events, a pod's
// conditions and which volume is not set up for it, a node's Ready
// condition and taints, the CSI calls in a table:
//
//   - BeBound, BeRunning (a pod Running with each CSI volume published for
//     it), BeGone, BeTerminating;
//   - BeReady, BeNotReady and HaveTaint on Nodes;
//   - HaveEvent on any object;
//   - HaveCSICalls and ContainCSICalls on a claim's volume or the cluster;
//   - HaveNoInvariantViolations on the cluster: every invariant csisim run
//     checks after a scenario.
//
// Gomega's own matchers get the typed object, read afresh each look:
// c.Eventually(pvc).Should(HaveField("Status.Phase", corev1.ClaimBound)).
//
// # Faults
//
// InjectFault injects what a scenario's fault steps do (package fault):
// CSI errors, delays and hangs on chosen methods, driver crashes and
// restarts, a node's loss, kubelet and controller restarts, API conflicts
// and dropped watches.
//
// It wraps the simulator (sim/cluster) and the scenario runner's checks
// (package scenarios): the cluster, the faults, the CSI call checks and
// the invariants are the ones csisim run uses.
package csisimtest
