package provisioner

import (
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	testingclock "k8s.io/utils/clock/testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestDriverParameters(t *testing.T) {
	got, err := driverParameters(map[string]string{"kind": "block", "csiProvisionerSecretName": "s",
		"csi.storage.k8s.io/fstype": "ext4", "csi.storage.k8s.io/provisioner-secret-name": "x", "csi.storage.k8s.io/secret-namespace": "y"})
	if err != nil {
		t.Fatal(err)
	}
	// The deprecated unprefixed keys stay, as the sidecar keeps them.
	if want := map[string]string{"kind": "block", "csiProvisionerSecretName": "s"}; !maps.Equal(got, want) {
		t.Errorf("driverParameters = %v, want %v", got, want)
	}
	_, err = driverParameters(map[string]string{"csi.storage.k8s.io/fs-type": "ext4"})
	want := `failed to strip CSI Parameters of prefixed keys: found unknown parameter key "csi.storage.k8s.io/fs-type" with reserved namespace csi.storage.k8s.io/`
	if err == nil || err.Error() != want {
		t.Errorf("unknown key: error %v, want %q", err, want)
	}
}

func TestFSTypeOf(t *testing.T) {
	for _, tc := range []struct {
		params  map[string]string
		want    string
		wantErr bool
	}{
		{nil, "", false},
		{map[string]string{"csi.storage.k8s.io/fstype": "xfs"}, "xfs", false},
		{map[string]string{"FSType": "ext3"}, "ext3", false},
		{map[string]string{"fstype": "ext3", "csi.storage.k8s.io/fstype": "xfs"}, "", true},
	} {
		got, err := fsTypeOf(tc.params)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("fsTypeOf(%v) = %q, %v; want %q, error %v", tc.params, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestClaimNameOffset(t *testing.T) {
	// The claims of one StatefulSet member hash alike; members step by one.
	if claimNameOffset("data-web-0") != claimNameOffset("logs-web-0") {
		t.Error("claims of one StatefulSet member should share an offset")
	}
	if claimNameOffset("data-web-1") != claimNameOffset("data-web-0")+1 {
		t.Error("StatefulSet members should step by one")
	}
	if claimNameOffset("data") == claimNameOffset("big") {
		t.Error("different names should (here) hash differently")
	}
}

func TestAllowedTerms(t *testing.T) {
	terms := allowedTerms([]corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
		{Key: "zone", Values: []string{"a", "b"}}, {Key: "rack", Values: []string{"1"}}}}})
	var got []string
	for _, tm := range terms {
		got = append(got, segmentString(tm))
	}
	if want := "rack=1,zone=a;rack=1,zone=b"; strings.Join(got, ";") != want {
		t.Errorf("allowedTerms = %v, want %s", got, want)
	}
}

func TestFailureClasses(t *testing.T) {
	selected := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{storagehelpers.AnnSelectedNode: "node-a"}}}
	immediate := &corev1.PersistentVolumeClaim{}
	exhausted := status.Error(codes.ResourceExhausted, "full")
	if !rescheduleAfter(exhausted, true, selected) {
		t.Error("ResourceExhausted with a selected node and topology should reschedule")
	}
	if rescheduleAfter(exhausted, true, immediate) || rescheduleAfter(exhausted, false, selected) {
		t.Error("without a selected node or topology there is nothing to reschedule")
	}
	if rescheduleAfter(status.Error(codes.Internal, "x"), true, selected) {
		t.Error("only ResourceExhausted reschedules")
	}
	if !infeasible(status.Error(codes.InvalidArgument, "x")) || infeasible(exhausted) {
		t.Error("only InvalidArgument is infeasible")
	}
}

func TestSlowRetries(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	s := newSlowRetries(clk)
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{UID: "c"}}
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{UID: "1"}}
	if s.delayed(claim, class) != nil {
		t.Fatal("a claim never marked is not delayed")
	}
	s.mark(claim, class)
	clk.Step(RetryIntervalMax - time.Second)
	if s.delayed(claim, class) == nil {
		t.Error("within RetryIntervalMax the claim should be delayed")
	}
	if s.delayed(claim, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{UID: "2"}}) != nil {
		t.Error("a new class should end the delay")
	}
	s.mark(claim, class)
	clk.Step(RetryIntervalMax)
	if s.delayed(claim, class) != nil {
		t.Error("after RetryIntervalMax the claim should be tried again")
	}
}
