package apiproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// restartWatchCache marks the cluster's current resourceVersion as where a
// restarted kube-apiserver's watch cache would begin (Config.ResourceVersion).
func (p *Proxy) restartWatchCache() error {
	if p.cfg.ResourceVersion == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rv, err := p.cfg.ResourceVersion(ctx)
	if err != nil {
		return fmt.Errorf("apiproxy: the resourceVersion the watch cache begins at: %w", err)
	}
	p.faults.mu.Lock()
	p.faults.cacheBegins = rv
	p.faults.mu.Unlock()
	return nil
}

// expiredWatch answers a watch from a resourceVersion older than where the
// watch cache began after the last outage as kube-apiserver's cacher does:
// 200 OK, and in the stream one ERROR event, 410 Gone with reason Expired,
// "too old resource version: <asked> (<oldest it holds>)"
// (k8s.io/apiserver pkg/storage/cacher watch_cache.go
// getAllEventsSinceLocked; cacher.go Watch sends the error as an event). A
// reflector takes it as its cue to list again. A watch that asks for the
// initial events (sendInitialEvents) is served: it wants any state at
// least that new. It reports whether it answered.
func (p *Proxy) expiredWatch(w http.ResponseWriter, r *http.Request) bool {
	p.faults.mu.Lock()
	begins := p.faults.cacheBegins
	p.faults.mu.Unlock()
	if begins == 0 {
		return false
	}
	q := r.URL.Query()
	rv, err := strconv.ParseUint(q.Get("resourceVersion"), 10, 64)
	if err != nil || rv == 0 || rv >= begins || q.Get("sendInitialEvents") == "true" {
		return false
	}
	if info, err := p.info.NewRequestInfo(r); err != nil || info.Verb != "watch" {
		return false
	}
	st := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, begins)).Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	status, err := json.Marshal(st)
	if err != nil {
		return false
	}
	body, err := json.Marshal(metav1.WatchEvent{Type: string(watch.Error), Object: runtime.RawExtension{Raw: status}})
	if err != nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
	return true
}
