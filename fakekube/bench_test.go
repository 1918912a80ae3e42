package fakekube

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		if _, err := srv.store.create("bench", res, "default", configMap(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}

func BenchmarkStoreUpdate(b *testing.B) {
	srv := New(Options{})
	res := srv.reg.byGVR[coreV1.WithResource("configmaps")]
	if _, err := srv.store.create("bench", res, "default", configMap(0)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		cm := configMap(0)
		cm.Data["k"] = fmt.Sprint(i)
		if _, err := srv.store.update("bench", "update", res, "default", "cm-0", "", cm, nil, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
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
