// The csisim timeline page: builds the swim-lanes from the data embedded
// in the page (and, on a live page, polled from the server), shows a
// clicked entry's JSON, and filters by claim, pod or volume.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("timeline-data").textContent);
  var grid = document.getElementById("timeline");
  var filter = document.getElementById("filter");
  var subject = document.getElementById("subject");
  var lanes = [];
  var laneColumn = {};
  var records = [];
  var rows = [];
  var lastSeq = 0;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function sameLanes(a, b) {
    return a.length === b.length && a.every(function (l, i) { return l.id === b[i].id; });
  }

  // render draws everything anew: the lane heads, the lanes and each row.
  function render() {
    grid.textContent = "";
    rows = [];
    laneColumn = {};
    grid.style.gridTemplateColumns = "max-content repeat(" + lanes.length + ", minmax(7.5em, 1fr))";
    grid.appendChild(el("div", "axis-head", "virtual time"));
    lanes.forEach(function (l, i) {
      laneColumn[l.id] = i + 2;
      var head = el("div", "lane-head", l.title);
      head.dataset.lane = l.id;
      head.style.gridColumn = String(i + 2);
      head.style.gridRow = "1";
      grid.appendChild(head);
      var stripe = el("div", "lane");
      stripe.style.gridColumn = String(i + 2);
      grid.appendChild(stripe);
    });
    records.forEach(addRow);
    stretchLanes();
  }

  // stretchLanes makes the lanes' dashed lines run down every row.
  function stretchLanes() {
    grid.querySelectorAll(".lane").forEach(function (s) {
      s.style.gridRow = "2 / span " + Math.max(rows.length, 1);
    });
  }

  function addRow(r) {
    var line = rows.length + 2;
    var row = el("div", "row");
    row.dataset.kind = r.kind;
    if (r.seq) { row.dataset.seq = String(r.seq); }
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
      entry.style.gridColumn = "2 / " + (lanes.length + 2);
    } else if (r.target && laneColumn[r.target] !== undefined) {
      var to = laneColumn[r.target];
      entry.classList.add("msg", to >= from ? "ltr" : "rtl");
      entry.style.gridColumn = Math.min(from, to) + " / " + (Math.max(from, to) + 1);
    } else {
      // A note starts in its lane and may run over the lanes to its
      // right: nothing else is on its row.
      entry.classList.add("note");
      entry.style.gridColumn = from + " / " + (lanes.length + 2);
    }
    if (r.failed) { entry.classList.add("failed"); }
    entry.addEventListener("click", function () { show(r, entry); });
    row.appendChild(entry);
    row.searchText = (r.label + " " + (r.keys || []).join(" ")).toLowerCase();
    row.record = r;
    grid.appendChild(row);
    rows.push(row);
    (r.keys || []).forEach(addSubject);
    applyFilter(row);
  }

  function show(r, entry) {
    grid.querySelectorAll(".entry.selected").forEach(function (e) { e.classList.remove("selected"); });
    entry.classList.add("selected");
    document.getElementById("detail-title").textContent = r.label;
    document.getElementById("detail-json").textContent = JSON.stringify(r.line, null, 2);
    document.getElementById("detail").hidden = false;
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

  // applyFilter shows the row if it concerns the chosen claim, pod or
  // volume and contains the text; violations always show.
  function applyFilter(row) {
    var r = row.record;
    var text = filter.value.trim().toLowerCase();
    var want = subject.value;
    var visible = r.kind === "INVARIANT" ||
      ((want === "" || (r.keys || []).indexOf(want) >= 0) && (text === "" || row.searchText.indexOf(text) >= 0));
    row.hidden = !visible;
  }

  function applyFilters() {
    rows.forEach(applyFilter);
    var shown = rows.filter(function (r) { return !r.hidden; }).length;
    document.getElementById("count").textContent = shown + " of " + rows.length + " entries";
  }

  function take(page) {
    page.records.forEach(function (r) { if (r.seq) { lastSeq = Math.max(lastSeq, r.seq); } });
    if (!sameLanes(lanes, page.lanes)) {
      lanes = page.lanes;
      records = records.concat(page.records);
      render();
    } else {
      records = records.concat(page.records);
      page.records.forEach(addRow);
      stretchLanes();
    }
    applyFilters();
  }

  // poll asks a live page's server for the entries after the last one
  // shown, once a second.
  function poll() {
    fetch(data.live + "?after=" + lastSeq).then(function (resp) {
      if (!resp.ok) { throw new Error(resp.status + " " + resp.statusText); }
      return resp.json();
    }).then(function (page) {
      if (page.records.length > 0 || !sameLanes(lanes, page.lanes)) { take(page); }
      document.getElementById("live-status").textContent = "live: updated at entry #" + lastSeq;
    }).catch(function (err) {
      document.getElementById("live-status").textContent = "live: " + err.message;
    }).then(function () { setTimeout(poll, 1000); });
  }

  // fromAddress applies what the page's address asks for after its #:
  // subject=<claim, pod or volume>, filter=<text>, seq=<entry to show>,
  // e.g. #subject=claim%20default%2Fdata&seq=12.
  function fromAddress() {
    var params = new URLSearchParams(location.hash.slice(1));
    if (params.has("subject")) {
      addSubject(params.get("subject"));
      subject.value = params.get("subject");
    }
    if (params.has("filter")) { filter.value = params.get("filter"); }
    var seq = Number(params.get("seq"));
    rows.forEach(function (row) {
      if (seq && row.record.seq === seq) { show(row.record, row.querySelector(".entry")); }
    });
    applyFilters();
  }

  filter.addEventListener("input", applyFilters);
  subject.addEventListener("change", applyFilters);
  document.getElementById("detail-close").addEventListener("click", function () {
    document.getElementById("detail").hidden = true;
  });
  take(data);
  fromAddress();
  window.addEventListener("hashchange", fromAddress);
  if (data.live) { poll(); }
}());
