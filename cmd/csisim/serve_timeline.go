package main

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/csisim/csisim/trace"
)

// timelinePath is where `csisim serve` serves the cluster's timeline as a
// live page (trace.WriteHTML); the page polls timelinePath + "/data" for
// the entries it does not have yet.
const (
	timelinePath     = "/csisim/timeline"
	timelineDataPath = timelinePath + "/data"
)

// withTimeline serves the live timeline page beside the API server: the two
// paths of the page go to it, every other request to api, untouched, so
// that kubectl and client-go see the API server as before. It is made
// when the cluster has started: the entries so far are its start-up,
// which the page folds.
func withTimeline(api http.Handler, rec *trace.Recorder, root string) http.Handler {
	startUp := rec.Len()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case timelinePath:
			serveTimelinePage(w, r, liveTimeline(rec, root, startUp))
		case timelineDataPath:
			serveTimelineData(w, r, liveTimeline(rec, root, startUp))
		default:
			api.ServeHTTP(w, r)
		}
	})
}

// liveTimeline is the cluster's timeline so far, with the CSI calls in
// flight.
func liveTimeline(rec *trace.Recorder, root string, startUp int) trace.Timeline {
	entries, inFlight := rec.Snapshot()
	return trace.Timeline{Entries: entries, InFlight: inFlight, Root: root, StartUp: startUp}
}

func serveTimelinePage(w http.ResponseWriter, r *http.Request, tl trace.Timeline) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "the timeline page is read with GET", http.StatusMethodNotAllowed)
		return
	}
	var page bytes.Buffer
	if err := trace.WriteHTML(&page, tl, trace.HTMLOptions{Title: "csisim serve: live timeline", Live: timelineDataPath}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(page.Bytes())
}

// serveTimelineData answers ?after=N with the lanes and the entries after
// the first N, as trace.PageData has them.
func serveTimelineData(w http.ResponseWriter, r *http.Request, tl trace.Timeline) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "the timeline's data is read with GET", http.StatusMethodNotAllowed)
		return
	}
	after := 0
	if s := r.URL.Query().Get("after"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			http.Error(w, "after: want the number of entries the page has", http.StatusBadRequest)
			return
		}
		after = n
	}
	data, err := trace.PageData(tl, after)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(data)
}
