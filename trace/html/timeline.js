// The csisim timeline page: heads the page with the run's verdict, builds
// the swim-lanes from the data embedded in the page (and, on a live page,
// polled from the server), folds the cluster's start-up and what came
// after the steps, shows a clicked entry's JSON, and filters by claim, pod
// or volume.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("timeline-data").textContent);
  var grid = document.getElementById("timeline");
  var filter = document.getElementById("filter");
  var subject = document.getElementById("subject");
  var view = { lanes: [], records: [], inFlight: [], startUp: 0, stepsEnd: 0 };
  var unfolded = { startup: false, after: false };
  var laneColumn = {};
  var rows = [];
  var lastSeq = 0;
  var selected = null; // the key of the row shown in the detail pane

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  // rowKey names a row across renders: an entry by its seq, where a call
  // was sent by "sent" and its seq (or its start, if it is in flight).
  function rowKey(r) {
    if (r.sent) { return "sent:" + (r.seq || r.atText + " " + r.lane + " " + r.label); }
    return r.seq ? "seq:" + r.seq : "row:" + r.atText + " " + r.label;
  }

  // phase is where an entry is in the run: the cluster's start-up, the
  // steps, or after them (clean-up and shutdown).
  function phase(seq) {
    if (seq > 0 && seq <= view.startUp) { return "startup"; }
    if (view.stepsEnd > 0 && seq > view.stepsEnd) { return "after"; }
    return "run";
  }

  // layout is the records in the order the page shows them: the entries
  // and violations in timeline order, each call's sending after the entry
  // it followed, and a fold before the start-up's and the after-steps'
  // first rows.
  function layout() {
    var anchored = {};
    var anchors = [];
    function anchor(r) {
      if (!anchored[r.after]) { anchored[r.after] = []; anchors.push(r.after); }
      anchored[r.after].push(r);
    }
    view.records.forEach(function (r) { if (r.sent) { anchor(r); } });
    view.inFlight.forEach(anchor);
    var out = [];
    var at = 0; // the seq of the last entry laid out
    var folded = {};
    function place(r, ph) {
      if (ph !== "run" && !folded[ph]) {
        folded[ph] = true;
        out.push({ fold: ph });
      }
      out.push({ record: r, phase: ph });
    }
    function flush(upTo) {
      anchors.sort(function (a, b) { return a - b; });
      while (anchors.length > 0 && anchors[0] <= upTo) {
        var a = anchors.shift();
        anchored[a].forEach(function (r) { place(r, phase(a)); });
      }
    }
    view.records.forEach(function (r) {
      if (r.sent) { return; }
      if (r.seq) {
        flush(r.seq - 1);
        at = r.seq;
      }
      place(r, r.seq ? phase(r.seq) : phase(at));
    });
    flush(Infinity);
    return out;
  }

  // render draws everything anew: the verdict, the lane heads, the lanes
  // and each row.
  function render() {
    var frag = document.createDocumentFragment();
    rows = [];
    laneColumn = {};
    grid.style.gridTemplateColumns = "max-content repeat(" + view.lanes.length + ", minmax(6.5em, 1fr))";
    frag.appendChild(el("div", "axis-head", "virtual time"));
    var stripes = [];
    view.lanes.forEach(function (l, i) {
      laneColumn[l.id] = i + 2;
      var head = el("div", "lane-head", l.title);
      head.dataset.lane = l.id;
      head.title = l.title;
      head.style.gridColumn = String(i + 2);
      head.style.gridRow = "1";
      frag.appendChild(head);
      var stripe = el("div", "lane");
      stripe.style.gridColumn = String(i + 2);
      frag.appendChild(stripe);
      stripes.push(stripe);
    });
    var line = 2;
    layout().forEach(function (item) {
      if (item.fold) {
        frag.appendChild(foldRow(item.fold, line++));
      } else {
        frag.appendChild(addRow(item.record, item.phase, line++));
      }
    });
    stripes.forEach(function (s) { s.style.gridRow = "2 / " + Math.max(line, 3); });
    grid.replaceChildren(frag);
    rows.forEach(function (row) {
      if (row.key === selected) { show(row.record, row.querySelector(".entry")); }
    });
    renderVerdict();
    applyFilters();
  }

  function foldRow(ph, line) {
    var n = 0, first = "", last = "";
    view.records.forEach(function (r) {
      if (r.seq && !r.sent && phase(r.seq) === ph) {
        n++;
        if (!first) { first = r.atText; }
        last = r.atText;
      }
    });
    var what = ph === "startup" ? "of the cluster's own start-up, before anyone used it" :
      "after the steps: the run's clean-up and the cluster's shutdown (a call cut off ends here)";
    var b = el("button", "fold");
    b.type = "button";
    b.dataset.fold = ph;
    b.textContent = (unfolded[ph] ? "▾ hide " : "▸ show ") + n + " entries " + what + ", " + first + " to " + last;
    b.style.gridRow = String(line);
    b.addEventListener("click", function () {
      unfolded[ph] = !unfolded[ph];
      render();
    });
    return b;
  }

  function addRow(r, ph, line) {
    var row = el("div", "row");
    row.dataset.kind = r.kind;
    row.dataset.phase = ph;
    if (r.seq) { row.dataset.seq = String(r.seq); }
    if (r.sent) { row.dataset.sent = r.seq ? "answered" : "in-flight"; }
    if (r.lane !== undefined) { row.dataset.lane = r.lane; }
    if (r.target) { row.dataset.target = r.target; }
    var time = el("div", "time", r.atText);
    time.style.gridRow = String(line);
    time.style.gridColumn = "1";
    row.appendChild(time);

    var entry = el("div", "entry kind-" + r.kind, r.label);
    entry.title = r.label;
    entry.style.gridRow = String(line);
    var from = laneColumn[r.lane || ""];
    if (r.kind === "INVARIANT" || from === undefined) {
      entry.style.gridColumn = "2 / " + (view.lanes.length + 2);
    } else if (r.target && laneColumn[r.target] !== undefined) {
      var to = laneColumn[r.target];
      entry.classList.add("msg", to >= from ? "ltr" : "rtl");
      entry.style.gridColumn = Math.min(from, to) + " / " + (Math.max(from, to) + 1);
    } else {
      // A note starts in its lane and may run over the lanes to its
      // right: nothing else is on its row.
      entry.classList.add("note");
      entry.style.gridColumn = from + " / " + (view.lanes.length + 2);
    }
    if (r.failed) { entry.classList.add("failed"); }
    if (r.sent) { entry.classList.add("sent"); }
    if (r.sent && !r.seq) { entry.classList.add("inflight"); }
    if (r.cutOff) { entry.classList.add("cutoff"); }
    entry.addEventListener("click", function () { show(r, entry); });
    row.appendChild(entry);
    row.searchText = (r.label + " " + (r.keys || []).join(" ")).toLowerCase();
    row.record = r;
    row.phase = ph;
    row.key = rowKey(r);
    rows.push(row);
    (r.keys || []).forEach(addSubject);
    return row;
  }

  function show(r, entry) {
    grid.querySelectorAll(".entry.selected").forEach(function (e) { e.classList.remove("selected"); });
    entry.classList.add("selected");
    selected = rowKey(r);
    document.getElementById("detail-title").textContent = r.label;
    document.getElementById("detail-json").textContent = JSON.stringify(r.line, null, 2);
    document.getElementById("detail").hidden = false;
  }

  // reveal shows a row the verdict names: unfolded, scrolled to, chosen.
  function reveal(key) {
    var row = rows.find(function (x) { return x.key === key; });
    if (!row) { return; }
    if (row.phase !== "run" && !unfolded[row.phase]) {
      unfolded[row.phase] = true;
      selected = key;
      render();
      row = rows.find(function (x) { return x.key === key; });
    }
    if (row.hidden) {
      subject.value = "";
      filter.value = "";
      applyFilters();
    }
    var entry = row.querySelector(".entry");
    show(row.record, entry);
    // Down the timeline only: a wide arrow would scroll the lanes sideways.
    grid.scrollTop = Math.max(0, entry.offsetTop - grid.clientHeight / 2);
  }

  // renderVerdict heads the page: how the run ended, the failing step,
  // the invariants broken and the calls left in flight, each a link to
  // its row.
  function renderVerdict() {
    var box = document.getElementById("verdict");
    var failedSteps = view.records.filter(function (r) { return r.kind === "STEP" && r.failed; });
    var violations = view.records.filter(function (r) { return r.kind === "INVARIANT"; });
    var hanging = view.records.filter(function (r) { return r.sent && r.cutOff; }).concat(view.inFlight);
    var status, summary, cls;
    if (data.verdict) {
      status = data.verdict.passed ? "PASSED" : "FAILED";
      cls = data.verdict.passed ? "passed" : "failed";
      summary = data.verdict.summary;
    } else if (data.live) {
      status = "LIVE";
      cls = "live";
      summary = "the cluster is running; " + lastSeq + " entries so far";
    } else if (failedSteps.length > 0) {
      status = "FAILED";
      cls = "failed";
      summary = "a step failed";
    } else {
      status = "ENDED";
      cls = "ended";
      summary = "no step failed; the page was not told the run's verdict";
    }
    box.className = "verdict " + cls;
    document.getElementById("verdict-status").textContent = status;
    document.getElementById("verdict-summary").textContent = summary;
    var list = document.getElementById("verdict-items");
    list.textContent = "";
    function items(what, recs) {
      recs.slice(0, 8).forEach(function (r) {
        var li = el("li", "", what + ": ");
        var a = el("a", "", r.label);
        a.addEventListener("click", function () { reveal(rowKey(r)); });
        li.appendChild(a);
        list.appendChild(li);
      });
      if (recs.length > 8) { list.appendChild(el("li", "", "and " + (recs.length - 8) + " more of them")); }
    }
    items("failing step", failedSteps);
    items("invariant violated", violations);
    items(data.live ? "in flight" : "left in flight", hanging);
  }

  // addSubject offers a claim, pod or volume in the select, in order.
  function addSubject(key) {
    var opts = subject.options;
    for (var i = 1; i < opts.length; i++) {
      if (opts[i].value === key) { return; }
      if (opts[i].value > key) { break; }
    }
    var o = el("option", "", key);
    o.value = key;
    subject.insertBefore(o, opts[i] || null);
  }

  // applyFilter shows the row if its part of the run is not folded, it
  // concerns the chosen claim, pod or volume and contains the text;
  // violations always show.
  function applyFilter(row) {
    var r = row.record;
    var text = filter.value.trim().toLowerCase();
    var want = subject.value;
    var visible = r.kind === "INVARIANT" ||
      ((row.phase === "run" || unfolded[row.phase]) &&
       (want === "" || (r.keys || []).indexOf(want) >= 0) && (text === "" || row.searchText.indexOf(text) >= 0));
    row.hidden = !visible;
  }

  function applyFilters() {
    rows.forEach(applyFilter);
    var entries = rows.filter(function (r) { return !r.record.sent; });
    var shown = entries.filter(function (r) { return !r.hidden; }).length;
    document.getElementById("count").textContent = shown + " of " + entries.length + " entries";
  }

  function take(page) {
    page.records.forEach(function (r) { if (r.seq) { lastSeq = Math.max(lastSeq, r.seq); } });
    view.lanes = page.lanes;
    view.records = view.records.concat(page.records);
    view.inFlight = page.inFlight || [];
    view.startUp = Math.max(view.startUp, page.startUp || 0);
    view.stepsEnd = page.stepsEnd || 0;
    render();
  }

  // poll asks a live page's server for the entries after the last one
  // shown, and the calls in flight, once a second.
  function poll() {
    fetch(data.live + "?after=" + lastSeq).then(function (resp) {
      if (!resp.ok) { throw new Error(resp.status + " " + resp.statusText); }
      return resp.json();
    }).then(function (page) {
      var inFlight = JSON.stringify(page.inFlight || []);
      if (page.records.length > 0 || JSON.stringify(page.lanes) !== JSON.stringify(view.lanes) ||
          inFlight !== JSON.stringify(view.inFlight)) {
        take(page);
      }
      document.getElementById("live-status").textContent = "live: updated at entry #" + lastSeq;
    }).catch(function (err) {
      document.getElementById("live-status").textContent = "live: " + err.message;
    }).then(function () { setTimeout(poll, 1000); });
  }

  // fromAddress applies what the page's address asks for after its #:
  // subject=<claim, pod or volume>, filter=<text>, seq=<entry to show>,
  // all (the start-up and what came after the steps unfolded), e.g.
  // #subject=claim%20default%2Fdata&seq=12.
  function fromAddress() {
    var params = new URLSearchParams(location.hash.slice(1));
    if (params.has("subject")) {
      addSubject(params.get("subject"));
      subject.value = params.get("subject");
    }
    if (params.has("filter")) { filter.value = params.get("filter"); }
    if (params.has("all")) {
      unfolded.startup = unfolded.after = true;
      render();
    }
    applyFilters();
    var seq = Number(params.get("seq"));
    if (seq) { reveal("seq:" + seq); }
  }

  filter.addEventListener("input", applyFilters);
  subject.addEventListener("change", applyFilters);
  document.getElementById("detail-close").addEventListener("click", function () {
    document.getElementById("detail").hidden = true;
    selected = null;
  });
  take(data);
  fromAddress();
  window.addEventListener("hashchange", fromAddress);
  if (data.live) { poll(); }
}());
