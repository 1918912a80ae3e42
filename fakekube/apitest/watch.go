package apitest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

func selectorsInListAndWatch(t *testing.T, e *env) {
	pods := e.cs.CoreV1().Pods(e.ns)
	for i, node := range []string{"", e.name("node")} {
		p := unscheduledPod(e.ns, fmt.Sprintf("p%d", i))
		p.Spec.NodeName = node
		p.Labels = map[string]string{"n": strconv.Itoa(i)}
		if _, err := pods.Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	onNode, err := pods.List(e.ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + e.name("node")})
	if err != nil || len(onNode.Items) != 1 || onNode.Items[0].Name != "p1" {
		t.Errorf("list by spec.nodeName: %v %v, want [p1]", names(onNode), err)
	}
	byLabel, err := pods.List(e.ctx, metav1.ListOptions{LabelSelector: "n=0"})
	if err != nil || len(byLabel.Items) != 1 || byLabel.Items[0].Name != "p0" {
		t.Errorf("list by label: %v %v, want [p0]", names(byLabel), err)
	}
	_, err = pods.List(e.ctx, metav1.ListOptions{FieldSelector: "spec.bogus=x"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "field label not supported: spec.bogus") {
		t.Errorf("unsupported field label: %v, want 400 field label not supported", err)
	}

	// An object that starts or stops matching a watch's selector is ADDED
	// to or DELETED from that watch.
	cms := e.cs.CoreV1().ConfigMaps(e.ns)
	w, err := cms.Watch(e.ctx, metav1.ListOptions{LabelSelector: "watched=yes"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cm := configMap(e.ns, "cm")
	created, err := cms.Create(e.ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Labels = map[string]string{"watched": "yes"}
	labelled, err := cms.Update(e.ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labelled.Labels = nil
	if _, err := cms.Update(e.ctx, labelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []watch.EventType{watch.Added, watch.Deleted} {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != want {
				t.Fatalf("watch event %s, want %s", ev.Type, want)
			}
		case <-time.After(e.target.Timeout):
			t.Fatalf("no %s event", want)
		}
	}
}

func names(list *corev1.PodList) []string {
	if list == nil {
		return nil
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Name)
	}
	return out
}

// informerSeesChangesInOrder drives a real SharedInformerFactory: it lists,
// watches and delivers every change, in order.
func informerSeesChangesInOrder(t *testing.T, e *env) {
	label := "apitest=" + e.suffix
	factory := informers.NewSharedInformerFactoryWithOptions(e.cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = label }))
	inf := factory.Storage().V1().VolumeAttachments().Informer()
	events := make(chan string, 100)
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { events <- "add " + obj.(*storagev1.VolumeAttachment).Name },
		UpdateFunc: func(_, obj any) {
			va := obj.(*storagev1.VolumeAttachment)
			events <- "update " + va.Name + " attached=" + strconv.FormatBool(va.Status.Attached)
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			events <- "delete " + obj.(*storagev1.VolumeAttachment).Name
		},
	})
	vas := e.cs.StorageV1().VolumeAttachments()
	before, after := e.name("before"), e.name("after")
	for _, n := range []string{before, after} {
		t.Cleanup(func() { _ = vas.Delete(e.ctx, n, metav1.DeleteOptions{}) })
	}
	labelled := func(name string) *storagev1.VolumeAttachment {
		va := attachment(name, e.name("node"))
		va.Labels = map[string]string{"apitest": e.suffix}
		return va
	}
	if _, err := vas.Create(e.ctx, labelled(before), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(e.ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	created, err := vas.Create(e.ctx, labelled(after), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Attached = true
	if _, err := vas.UpdateStatus(e.ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := vas.Delete(e.ctx, after, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"add " + before, "add " + after, "update " + after + " attached=true", "delete " + after}
	for i, w := range want {
		select {
		case got := <-events:
			if got != w {
				t.Fatalf("event %d = %q, want %q", i, got, w)
			}
		case <-time.After(e.target.Timeout):
			t.Fatalf("timed out waiting for event %d %q", i, w)
		}
	}
}
