package fakekube

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Benchmarks of the API server in its three uses: the store alone, client-go
// in-process (what the simulated controllers use) and client-go over HTTP
// on loopback (what kubectl and external programs use). Run with
//
//	go test -run xxx -bench . ./fakekube/

func configMap(i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "default"},
		Data: map[string]string{"k": "v"}}
}

func BenchmarkStoreCreate(b *testing.B) {
	srv := New(Options{})
	res := srv.reg.byGVR[coreV1.WithResource("configmaps")]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := srv.store.create(context.Background(), "bench", "bench", res, "default", configMap(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}

func BenchmarkStoreUpdate(b *testing.B) {
	srv := New(Options{})
	res := srv.reg.byGVR[coreV1.WithResource("configmaps")]
	if _, err := srv.store.create(context.Background(), "bench", "bench", res, "default", configMap(0)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		cm := configMap(0)
		cm.Data["k"] = fmt.Sprint(i)
		if _, err := srv.store.update(context.Background(), "bench", "bench", "update", res, "default", "cm-0", "", cm, nil, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}

// storeSizes are the numbers of stored objects the scale benchmarks run
// with: a write or a delete should cost the same at each.
var storeSizes = []int{1000, 10000}

// filledServer is a server holding n ConfigMaps and n Events, with a full
// watch history.
func filledServer(b *testing.B, n int) *Server {
	srv := New(Options{})
	cms := srv.reg.byGVR[coreV1.WithResource("configmaps")]
	events := srv.reg.byGVR[coreV1.WithResource("events")]
	for i := 0; i < n; i++ {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ev-%d", i), Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Name: fmt.Sprintf("cm-%d", i)}}
		if _, err := srv.store.create(context.Background(), "bench", "bench", cms, "default", configMap(i)); err != nil {
			b.Fatal(err)
		}
		if _, err := srv.store.create(context.Background(), "bench", "bench", events, "default", ev); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 10000; i++ { // the default history limit: the history is full
		cm := configMap(0)
		cm.Data["k"] = fmt.Sprint(i)
		if _, err := srv.store.update(context.Background(), "bench", "bench", "update", cms, "default", "cm-0", "", cm, nil, false); err != nil {
			b.Fatal(err)
		}
	}
	return srv
}

// BenchmarkStoreUpdateScale is the cost of one update with many objects
// stored and the history full.
func BenchmarkStoreUpdateScale(b *testing.B) {
	atEachStoreSize(b, func(b *testing.B, srv *Server, res *resource, _ int) {
		for i := 0; b.Loop(); i++ {
			cm := configMap(1)
			cm.Data["k"] = fmt.Sprint(i)
			if _, err := srv.store.update(context.Background(), "bench", "bench", "update", res, "default", "cm-1", "", cm, nil, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// atEachStoreSize runs bench as a sub-benchmark for each of storeSizes,
// with a filled server and its ConfigMaps resource.
func atEachStoreSize(b *testing.B, bench func(b *testing.B, srv *Server, res *resource, n int)) {
	for _, n := range storeSizes {
		b.Run(fmt.Sprintf("objects=%d", 2*n), func(b *testing.B) {
			srv := filledServer(b, n)
			b.ReportAllocs()
			bench(b, srv, srv.reg.byGVR[coreV1.WithResource("configmaps")], n)
		})
	}
}

// BenchmarkStoreDeleteScale is the cost of deleting an owner, with the
// garbage collection of its dependent, with many objects stored.
func BenchmarkStoreDeleteScale(b *testing.B) {
	atEachStoreSize(b, func(b *testing.B, srv *Server, res *resource, n int) {
		for i := 0; b.Loop(); i++ {
			owner, err := srv.store.create(context.Background(), "bench", "bench", res, "default", configMap(n+2*i))
			if err != nil {
				b.Fatal(err)
			}
			dep := configMap(n + 2*i + 1)
			m := owner.(*corev1.ConfigMap)
			dep.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: m.Name, UID: m.UID}}
			if _, err := srv.store.create(context.Background(), "bench", "bench", res, "default", dep); err != nil {
				b.Fatal(err)
			}
			if _, err := srv.store.delete("bench", res, "default", m.Name, metav1.DeleteOptions{}); err != nil {
				b.Fatal(err)
			}
			if _, err := srv.store.get(res, "default", dep.Name); err == nil {
				b.Fatal("the dependent was not collected")
			}
		}
	})
}

// clients returns the two client-go paths, each to a fresh server.
func clients(b *testing.B) map[string]kubernetes.Interface {
	return map[string]kubernetes.Interface{
		"in-process": kubernetes.NewForConfigOrDie(New(Options{}).RESTConfig("bench")),
		"http":       kubernetes.NewForConfigOrDie(serveHTTPB(b, New(Options{}))),
	}
}

func serveHTTPB(b *testing.B, srv *Server) *rest.Config {
	cfg := serveHTTP(b, srv)
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

func BenchmarkClientCreate(b *testing.B) {
	for name, cs := range clients(b) {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, configMap(i), metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}

func BenchmarkClientUpdate(b *testing.B) {
	for name, cs := range clients(b) {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, configMap(0), metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				cm.Data["k"] = fmt.Sprint(i)
				if cm, err = cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}

func BenchmarkClientGet(b *testing.B) {
	for name, cs := range clients(b) {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, configMap(0), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "cm-0", metav1.GetOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkClientList100 lists 100 objects with a label selector that
// matches half of them.
func BenchmarkClientList100(b *testing.B) {
	for name, cs := range clients(b) {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			for i := 0; i < 100; i++ {
				cm := configMap(i)
				cm.Labels = map[string]string{"half": fmt.Sprint(i % 2)}
				if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: "half=1"})
				if err != nil || len(list.Items) != 50 {
					b.Fatalf("list: %v, %d items", err, len(list.Items))
				}
			}
		})
	}
}

// BenchmarkWatchDelivery measures a write and its delivery to a watcher.
func BenchmarkWatchDelivery(b *testing.B) {
	for name, cs := range clients(b) {
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Stop()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, configMap(i), metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
				if ev := <-w.ResultChan(); ev.Type != watch.Added {
					b.Fatalf("event %s", ev.Type)
				}
			}
		})
	}
}

// BenchmarkTypeConverter is what a process pays once, at its first write,
// for the field manager's type converter: the OpenAPI schemas of every
// served kind, made into structured-merge-diff types.
func BenchmarkTypeConverter(b *testing.B) {
	reg := newRegistry(defaultResources())
	for b.Loop() {
		schemas, err := openAPIModelSchemas(reg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := managedfields.NewTypeConverter(schemas, false); err != nil {
			b.Fatal(err)
		}
	}
}
