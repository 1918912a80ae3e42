package kubelet

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSELinuxFileLabel(t *testing.T) {
	tests := []struct {
		name string
		opts *corev1.SELinuxOptions
		want string // a regexp
	}{
		{"none", nil, "^$"},
		{"empty", &corev1.SELinuxOptions{}, "^$"},
		{"level", &corev1.SELinuxOptions{Level: "s0:c1,c2"}, `^system_u:object_r:container_file_t:s0:c1,c2$`},
		{"user and level", &corev1.SELinuxOptions{User: "staff_u", Level: "s0:c5"}, `^staff_u:object_r:container_file_t:s0:c5$`},
		// The type and role are the process's; files keep container_file_t.
		{"type and role", &corev1.SELinuxOptions{Type: "spc_t", Role: "system_r", Level: "s0"}, `^system_u:object_r:container_file_t:s0$`},
		{"no level", &corev1.SELinuxOptions{Type: "container_t"}, `^system_u:object_r:container_file_t:s0:c[0-9]+,c[0-9]+$`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := seLinuxFileLabel(tc.opts, "uid-1/app"); !regexp.MustCompile(tc.want).MatchString(got) {
				t.Errorf("label %q, want %s", got, tc.want)
			}
		})
	}
}

// A level the pod leaves out is drawn as go-selinux draws one: two
// distinct categories below 1024, the smaller first; the same for one
// container, different for two.
func TestRandomMCS(t *testing.T) {
	seen := map[string]bool{}
	for i := range 200 {
		seed := fmt.Sprintf("uid-%d/app", i)
		mcs := randomMCS(seed)
		var c1, c2 int
		if _, err := fmt.Sscanf(mcs, "s0:c%d,c%d", &c1, &c2); err != nil || c1 >= c2 || c2 >= mcsCategories {
			t.Fatalf("%s: level %q", seed, mcs)
		}
		if randomMCS(seed) != mcs {
			t.Fatalf("%s: not repeatable", seed)
		}
		seen[mcs] = true
	}
	if len(seen) < 190 {
		t.Errorf("only %d levels of 200 differ", len(seen))
	}
}

const (
	labelC1C2 = "system_u:object_r:container_file_t:s0:c1,c2"
	labelC3C4 = "system_u:object_r:container_file_t:s0:c3,c4"
)

func podLevel(level string, policy *corev1.PodSELinuxChangePolicy) *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: level}, SELinuxChangePolicy: policy}
}

// The context mount option in NodeStageVolume and NodePublishVolume, as a
// v1.37 kubelet adds it: only on a node with SELinux, for a driver whose
// CSIDriver says seLinuxMount: true, a pod with a label that did not ask
// for Recursive relabelling; any access mode (SELinuxMount is on by
// default in v1.37); a container's own options before the pod's.
func TestSELinuxMountOption(t *testing.T) {
	recursive, mountOption := corev1.SELinuxChangePolicyRecursive, corev1.SELinuxChangePolicyMountOption
	withLabel := func(c corev1.Container, level string) *corev1.Container {
		c.SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: level}}
		return &c
	}
	tests := []struct {
		name string
		o    envOptions
		want []string // the mount flags of both calls
	}{
		{"enabled node, seLinuxMount driver", envOptions{seLinux: true, driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)},
			podSecurity: podLevel("s0:c1,c2", nil)}, []string{`context="` + labelC1C2 + `"`}},
		{"policy MountOption", envOptions{seLinux: true, driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)},
			podSecurity: podLevel("s0:c1,c2", &mountOption)}, []string{`context="` + labelC1C2 + `"`}},
		{"after the PV's mount options", envOptions{seLinux: true, driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)},
			podSecurity: podLevel("s0:c1,c2", nil), mountOptions: []string{"noatime"}}, []string{"noatime", `context="` + labelC1C2 + `"`}},
		{"ReadWriteMany", envOptions{seLinux: true, driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)},
			podSecurity: podLevel("s0:c1,c2", nil), modes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}},
			[]string{`context="` + labelC1C2 + `"`}},
		{"the container's label", envOptions{seLinux: true, driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)},
			podSecurity: podLevel("s0:c1,c2", nil), container: withLabel(usesData(false), "s0:c3,c4")}, []string{`context="` + labelC3C4 + `"`}},
		{"disabled node", envOptions{driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)}, podSecurity: podLevel("s0:c1,c2", nil)}, nil},
		{"driver without seLinuxMount", envOptions{seLinux: true, podSecurity: podLevel("s0:c1,c2", nil)}, nil},
		{"no CSIDriver", envOptions{seLinux: true, noCSIDriver: true, podSecurity: podLevel("s0:c1,c2", nil)}, nil},
		{"policy Recursive", envOptions{seLinux: true, driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)},
			podSecurity: podLevel("s0:c1,c2", &recursive)}, nil},
		{"pod without a label", envOptions{seLinux: true, driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.caps = stageCaps()
			e := newEnv(t, tc.o)
			e.runningPod()
			if len(e.node.stage) != 1 || len(e.node.pub) != 1 {
				t.Fatalf("calls %v", e.node.lifecycle())
			}
			stage := e.node.stage[0].GetVolumeCapability().GetMount().GetMountFlags()
			pub := e.node.pub[0].GetVolumeCapability().GetMount().GetMountFlags()
			if !slices.Equal(stage, tc.want) || !slices.Equal(pub, tc.want) {
				t.Errorf("mount flags: stage %q, publish %q, want %q", stage, pub, tc.want)
			}
			// vol_data.json beside both mounts keeps the label, if any.
			label := ""
			if n := len(tc.want); n > 0 && strings.HasPrefix(tc.want[n-1], "context=") {
				label = strings.Trim(strings.TrimPrefix(tc.want[n-1], "context="), `"`)
			}
			for _, dir := range []string{filepath.Dir(e.node.stage[0].GetStagingTargetPath()), filepath.Dir(e.node.pub[0].GetTargetPath())} {
				data, err := loadVolumeData(dir)
				if got, ok := data[volDataSELinux]; err != nil || got != label || ok != (label != "") {
					t.Errorf("%s: vol_data.json %v (%v), want the label %q", dir, data, err, label)
				}
			}
		})
	}
}

// addSecondPod creates a second pod on the node, with the claim of the
// first and the security context sc, and waits for the informer to have it.
func (e *env) addSecondPod(sc *corev1.PodSecurityContext) {
	e.t.Helper()
	second := e.pod.DeepCopy()
	second.Name, second.UID, second.ResourceVersion = "second", "uid-2", ""
	second.Spec.SecurityContext = sc
	if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), second, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor("the second pod in the informer", func() bool {
		_, err := e.k.pods.Pods("default").Get("second")
		return err == nil
	})
}

// syncSecond syncs the second pod as its queue would, the clock moved on
// to each requeue, at most n times.
func (e *env) syncSecond(n int) {
	e.t.Helper()
	for range n {
		d, ok := requeuedAfter(e.sync("default/second"))
		if !ok {
			return
		}
		e.clock.Step(d)
		// The status loop runs meanwhile: a volume that came back to the
		// desired state with the second pod is mounted only once reported.
		e.reportStatus()
	}
}

// secondsMountFailures are the second pod's FailedMount messages.
func (e *env) secondsMountFailures() []string {
	var out []string
	for _, ev := range e.mountFailures() {
		if ev.InvolvedObject.Name == "second" {
			out = append(out, ev.Message)
		}
	}
	return out
}

// Two pods on one node want one volume: with the same label the second is
// published the staged volume; with another (or none, or Recursive where
// the first mounts with a label) it is not taken into the desired state,
// and its pod worker reports the kubelet's conflict until the first pod is
// gone; then the volume is staged again with the second pod's label. On a
// node without SELinux, or for a driver without seLinuxMount, labels
// change nothing.
func TestSELinuxConflict(t *testing.T) {
	recursive := corev1.SELinuxChangePolicyRecursive
	conflict := func(second string) string {
		return "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: " +
			fmt.Sprintf("conflicting SELinux labels of volume %s: %q and %q", testPV, labelC1C2, second)
	}
	tests := []struct {
		name     string
		seLinux  bool
		driver   storagev1.CSIDriverSpec
		second   *corev1.PodSecurityContext
		conflict string // the second pod's event, "" for none
		// restage: the second pod's label, with which the volume is
		// staged again once the first pod is gone.
		restage string
	}{
		{name: "same label", seLinux: true, driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)}, second: podLevel("s0:c1,c2", nil)},
		{name: "other label", seLinux: true, driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)}, second: podLevel("s0:c3,c4", nil),
			conflict: conflict(labelC3C4), restage: labelC3C4},
		{name: "no label", seLinux: true, driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)}, conflict: conflict("")},
		{name: "Recursive", seLinux: true, driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)}, second: podLevel("s0:c1,c2", &recursive),
			conflict: conflict("")},
		{name: "disabled node", driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)}, second: podLevel("s0:c3,c4", nil)},
		{name: "driver without seLinuxMount", seLinux: true, second: podLevel("s0:c3,c4", nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{caps: stageCaps(), seLinux: tc.seLinux, driver: tc.driver, podSecurity: podLevel("s0:c1,c2", nil)})
			e.runningPod()
			e.addSecondPod(tc.second)
			e.syncSecond(5)
			got := e.secondsMountFailures()
			if tc.conflict == "" {
				if len(got) > 0 || !slices.Equal(e.node.lifecycle(), []string{"NodeStageVolume", "NodePublishVolume", "NodePublishVolume"}) {
					t.Fatalf("events %q, calls %v, want the second pod published", got, e.node.lifecycle())
				}
				return
			}
			if len(got) == 0 || got[0] != tc.conflict {
				t.Fatalf("events %q, want %q", got, tc.conflict)
			}
			if calls := e.node.lifecycle(); len(calls) != 2 {
				t.Fatalf("calls %v: the second pod was set up", calls)
			}
			if tc.restage == "" {
				return
			}
			e.deletePod()
			e.clock.Step(podWorkerBackOff)
			e.syncSecond(5)
			want := []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume", "NodeStageVolume", "NodePublishVolume"}
			if calls := e.node.lifecycle(); !slices.Equal(calls, want) {
				t.Fatalf("calls %v, want %v", calls, want)
			}
			flag := `context="` + tc.restage + `"`
			for _, c := range [][]string{e.node.stage[1].GetVolumeCapability().GetMount().GetMountFlags(), e.node.pub[1].GetVolumeCapability().GetMount().GetMountFlags()} {
				if !slices.Equal(c, []string{flag}) {
					t.Errorf("mount flags %q, want %s", c, flag)
				}
			}
		})
	}
}

// A pod whose containers give one volume two labels is refused with
// GetMountSELinuxLabel's error.
func TestSELinuxMultipleLabelsInPod(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(), seLinux: true, driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)},
		podSecurity: podLevel("s0:c1,c2", nil)})
	e.pod.Spec.InitContainers = []corev1.Container{usesData(false)}
	e.pod.Spec.InitContainers[0].Name = "init"
	e.pod.Spec.InitContainers[0].SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c3,c4"}}
	p := e.k.processVolumes(e.pod)
	want := "multiple SELinux labels found: " + labelC1C2 + "," + labelC3C4
	if !slices.Equal(p.failed, []string{"data"}) || strings.Join(p.errs, ";") != want {
		t.Errorf("failed %v errors %q, want data and %q", p.failed, p.errs, want)
	}
}

// A pod that comes for a volume still staged with a pod's label that is
// gone waits for the unstaging (the device is no longer wanted with that
// label, though the new pod wants the volume) and stages it again with
// its own.
func TestSELinuxRestageForNewLabel(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(), seLinux: true, driver: storagev1.CSIDriverSpec{SELinuxMount: ptr(true)},
		podSecurity: podLevel("s0:c1,c2", nil)})
	e.runningPod()
	// The unstaging is queued, not done yet, when the second pod comes.
	e.deletePodKeepDevices()
	e.addSecondPod(podLevel("s0:c3,c4", nil))
	e.syncSecond(1)
	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume"}) {
		t.Fatalf("calls %v: the second pod used the device staged with the first pod's label", got)
	}
	if devices := e.syncDevices(); len(devices) == 0 {
		t.Fatal("no unstaging queued")
	}
	e.syncSecond(5)
	want := []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume", "NodeStageVolume", "NodePublishVolume"}
	if got := e.node.lifecycle(); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	if got := e.node.stage[1].GetVolumeCapability().GetMount().GetMountFlags(); !slices.Equal(got, []string{`context="` + labelC3C4 + `"`}) {
		t.Errorf("staged again with %q", got)
	}
}
