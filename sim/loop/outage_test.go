package loop

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/fakekube"
)

func TestAPIDownThenRelist(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	var l *Loop
	api := fakekube.New(fakekube.Options{Clock: clk, Harness: []string{"harness"}, OnWrite: func(w fakekube.Write) {
		if l != nil {
			l.Observe(w)
		}
	}})
	l = New(api, clk, 1)
	cms := kubernetes.NewForConfigOrDie(api.RESTConfig("harness")).CoreV1().ConfigMaps("default")
	for _, n := range []string{"x", "y"} {
		if _, err := cms.Create(ctx, configMap(n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	inf, err := l.NewInformer(configMaps, "")
	if err != nil {
		t.Fatal(err)
	}
	inf.BelongsTo("attachdetach-controller")
	var h heard
	if _, err := inf.AddEventHandler(&h); err != nil {
		t.Fatal(err)
	}
	h.take()
	var relists []Relist
	api.SetDown(true)
	l.APIDown(func(r Relist) { relists = append(relists, r) })
	if got, want := l.Relisting(), []string{"attachdetach-controller configmaps"}; !slices.Equal(got, want) {
		t.Errorf("Relisting() = %v once the watches ended, want %v", got, want)
	}
	// The harness writes past the outage; the informer hears nothing.
	if _, err := cms.Create(ctx, configMap("z"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := l.RunFor(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := h.take(); len(got) != 0 || len(relists) != 0 {
		t.Fatalf("while the API server is down the informer heard %v and listed %d times", got, len(relists))
	}
	api.SetDown(false)
	back := clk.Now()
	if err := l.RunFor(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := l.Relisting(); len(got) != 0 {
		t.Errorf("Relisting() = %v after the list, want none", got)
	}
	if got, want := h.take(), []string{"tombstone default/x last seen as x", "add z"}; !slices.Equal(got, want) {
		t.Errorf("after the outage the handler heard %v, want %v", got, want)
	}
	if len(relists) != 1 || relists[0].Missed != 2 || relists[0].Component != "attachdetach-controller" {
		t.Fatalf("relists %+v, want one that missed 2 events", relists)
	}
	// The reflector tried every ≤ 60 s (30 s jittered by up to 100 %): it
	// is back within a minute of the server, then lists after one more
	// backoff, which the outage has grown to its 30 s maximum.
	if listed := relists[0].Delay - back.Sub(time.Unix(0, 0)); listed < 30*time.Second || listed > 2*time.Minute {
		t.Errorf("listed %s after the server came back, want within 30 s to 2 min", listed)
	}
}
