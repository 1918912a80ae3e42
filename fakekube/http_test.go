package fakekube

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapshotclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
)

// serveHTTP serves srv on a loopback port for the test's lifetime and
// returns a client configuration for it.
func serveHTTP(t testing.TB, srv *Server) *rest.Config {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Close() })
	return &rest.Config{Host: "http://" + l.Addr().String(), UserAgent: "http-test"}
}

// TestInformerOverHTTP runs a real SharedInformerFactory against the
// server over a socket: it lists, watches, and sees changes made by another
// client, in order.
func TestInformerOverHTTP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := serveHTTP(t, New(Options{Seed: 3}))
	cs := kubernetes.NewForConfigOrDie(cfg)
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().PersistentVolumeClaims().Informer()
	seen := make(chan string, 10)
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { seen <- "add " + o.(*corev1.PersistentVolumeClaim).Name },
		UpdateFunc: func(_, o any) { seen <- "update " + string(o.(*corev1.PersistentVolumeClaim).Status.Phase) },
		DeleteFunc: func(o any) { seen <- "delete " + cache.MetaObjectToName(o.(*corev1.PersistentVolumeClaim)).Name },
	})
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("no sync")
	}
	pvcs := cs.CoreV1().PersistentVolumeClaims("default")
	created, err := pvcs.Create(ctx, testPVC("data"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = corev1.ClaimBound
	if _, err := pvcs.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ := pvcs.Get(ctx, "data", metav1.GetOptions{})
	got.Finalizers = nil
	if _, err := pvcs.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pvcs.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"add data", "update Bound", "update Bound", "delete data"} {
		select {
		case got := <-seen:
			if got != want {
				t.Fatalf("informer saw %q, want %q", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out waiting for %q", want)
		}
	}
}

// TestSnapshotKindsOverHTTP uses the external-snapshotter clientset.
func TestSnapshotKindsOverHTTP(t *testing.T) {
	ctx := context.Background()
	cs := snapshotclient.NewForConfigOrDie(serveHTTP(t, New(Options{})))
	class := &snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "snap"}, Driver: "hostpath.csisim.io",
		DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete}
	if _, err := cs.SnapshotV1().VolumeSnapshotClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvc := "data"
	snap := &snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s1", Namespace: "default"},
		Spec: snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: &pvc}}}
	created, err := cs.SnapshotV1().VolumeSnapshots("default").Create(ctx, snap, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Generation != 1 {
		t.Errorf("custom resource generation = %d, want 1", created.Generation)
	}
	ready := true
	created.Status = &snapshotv1.VolumeSnapshotStatus{ReadyToUse: &ready}
	updated, err := cs.SnapshotV1().VolumeSnapshots("default").UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Status == nil || updated.Status.ReadyToUse == nil || !*updated.Status.ReadyToUse {
		t.Errorf("status = %+v, want readyToUse", updated.Status)
	}
	other := "other"
	updated.Spec.Source.PersistentVolumeClaimName = &other
	if _, err := cs.SnapshotV1().VolumeSnapshots("default").Update(ctx, updated, metav1.UpdateOptions{}); err == nil {
		t.Error("changing an immutable snapshot source was accepted")
	}
	bad := &snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s2", Namespace: "default"}}
	if _, err := cs.SnapshotV1().VolumeSnapshots("default").Create(ctx, bad, metav1.CreateOptions{}); err == nil {
		t.Error("a snapshot without a source was accepted")
	}
}

// TestBadBodiesChangeNothing sends malformed and mistyped bodies: each
// gets a 4xx with a message, and the store's resourceVersion stays put.
func TestBadBodiesChangeNothing(t *testing.T) {
	srv := New(Options{})
	cfg := serveHTTP(t, srv)
	for _, tc := range []struct {
		name, method, path, contentType, body, want string
		code                                        int
	}{
		{"malformed JSON", "POST", "/api/v1/namespaces/default/persistentvolumeclaims", "application/json",
			`{"apiVersion":"v1","kind":"PersistentVolumeClaim",`, "json parse error", 400},
		{"malformed YAML", "POST", "/api/v1/namespaces/default/configmaps", "application/yaml",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: [name\n", "invalid YAML", 400},
		{"wrong apiVersion", "POST", "/api/v1/namespaces/default/persistentvolumeclaims", "application/json",
			`{"apiVersion":"storage.k8s.io/v1","kind":"PersistentVolumeClaim","metadata":{"name":"x"}}`,
			"does not match the expected API version", 400},
		{"wrong kind", "POST", "/api/v1/namespaces/default/persistentvolumeclaims", "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, "does not match the expected kind", 400},
		{"unknown resource", "POST", "/api/v1/namespaces/default/widgets", "application/json",
			`{"apiVersion":"v1","kind":"Widget","metadata":{"name":"x"}}`, "could not find the requested resource", 404},
		{"unknown field, strict", "POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"datta":{}}`, `strict decoding error: unknown field`, 400},
		{"unknown content type", "POST", "/api/v1/namespaces/default/configmaps", "text/plain",
			`name: x`, "unknown format", 415},
		{"invalid object", "POST", "/api/v1/namespaces/default/persistentvolumeclaims", "application/json",
			`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"x"}}`, "spec.accessModes", 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.store.currentRV()
			req, _ := http.NewRequest(tc.method, cfg.Host+tc.path, bytes.NewBufferString(tc.body))
			req.Header.Set("Content-Type", tc.contentType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if !bytes.Contains(body, []byte(tc.want)) {
				t.Errorf("body %s does not say %q", body, tc.want)
			}
			if !bytes.Contains(body, []byte(`"kind":"Status"`)) {
				t.Errorf("body is not a metav1.Status: %s", body)
			}
			if after := srv.store.currentRV(); after != before {
				t.Errorf("resourceVersion moved %s -> %s: the store changed", before, after)
			}
		})
	}
}

// TestCustomResourcesAnswerJSONToProtobufClients: a client that prefers
// protobuf still gets the snapshot kinds, in JSON, as from a real server.
func TestCustomResourcesAnswerJSONToProtobufClients(t *testing.T) {
	cfg := serveHTTP(t, New(Options{}))
	req, _ := http.NewRequest("GET", cfg.Host+"/apis/snapshot.storage.k8s.io/v1/volumesnapshotclasses", nil)
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf, application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("status %d content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if !bytes.Contains(body, []byte(`"kind":"VolumeSnapshotClassList"`)) {
		t.Errorf("body: %s", body)
	}
}
