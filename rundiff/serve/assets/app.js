// rundiff serve: the thin page. It filters, sorts, groups and draws; every number comes from the
// JSON endpoints (the engines' own answers). State lives in the URL hash (deep links).
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var state = { sel: [], metric: "", step: null, group: "", q: "", sort: "", desc: false,
                smooth: 0, log: false };
  var listing = null, compareData = null, plotted = false, seq = 0;

  function esc(s) {
    return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function num(v) {
    if (v === null || v === undefined || v === "NaN") return "";
    if (typeof v !== "number") return String(v);
    var a = Math.abs(v);
    return a !== 0 && (a >= 1e5 || a < 1e-3) ? v.toExponential(3) : String(+v.toPrecision(4));
  }

  // -- deep links --------------------------------------------------------------------------------
  function readHash() {
    var p = new URLSearchParams(location.hash.slice(1));
    state.sel = p.getAll("run");
    state.metric = p.get("metric") || "";
    state.step = p.has("step") ? parseFloat(p.get("step")) : null;
    state.group = p.get("group") || "";
    state.q = p.get("q") || "";
    state.sort = p.get("sort") || "";
    state.desc = p.get("desc") === "1";
    state.smooth = parseFloat(p.get("smooth") || "0") || 0;
    state.log = p.get("log") === "1";
  }
  function writeHash() {
    var p = new URLSearchParams();
    state.sel.forEach(function (a) { p.append("run", a); });
    if (state.metric) p.set("metric", state.metric);
    if (state.step !== null) p.set("step", String(state.step));
    if (state.group) p.set("group", state.group);
    if (state.q) p.set("q", state.q);
    if (state.sort) { p.set("sort", state.sort); if (state.desc) p.set("desc", "1"); }
    if (state.smooth) p.set("smooth", String(state.smooth));
    if (state.log) p.set("log", "1");
    history.replaceState(null, "", location.pathname + location.search + "#" + p.toString());
  }

  function whenPlotly() {  // plotly.js loads after the run table (index.html): wait for it
    if (window.Plotly) return Promise.resolve();
    return new Promise(function (done) {
      $("plotly-js").addEventListener("load", function () { done(); }, { once: true });
    });
  }
  function getJSON(url) {
    return fetch(url, { credentials: "same-origin" }).then(function (r) {
      return r.json().then(function (d) { d.__status = r.status; return d; });
    });
  }

  // -- the run table -----------------------------------------------------------------------------
  function rowsOf(data) {
    var cols = {};
    data.table.runs.forEach(function (c) { cols[c.address] = c; });
    return data.runs.map(function (r) {
      var c = cols[r.address] || {};
      return { address: r.address, name: c.label || r.name, adapter: r.adapter, status: r.status,
               last_step: c.last_step, age: c.age, age_seconds: c.age_seconds, marks: c.marks || [],
               headline: c.headline, params: c.params || {}, alive: c.alive, read: c.read !== false };
    });
  }
  function columns() {
    var cols = [["name", "run"], ["adapter", "backend"], ["status", "status"],
                ["last_step", "last step"], ["age_seconds", "updated"],
                ["headline", listing.table.headline ? listing.table.headline + " (last)" : "headline"]];
    listing.table.differing.slice(0, 8).forEach(function (k) { cols.push(["p:" + k, k]); });
    return cols;
  }
  function value(row, key) {
    if (key.indexOf("p:") === 0) return row.params[key.slice(2)];
    return row[key];
  }
  function cmp(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined || a === "") return 1;
    if (b === null || b === undefined || b === "") return -1;
    var na = parseFloat(a), nb = parseFloat(b);
    if (!isNaN(na) && !isNaN(nb) && String(na) === String(a).trim() || typeof a === "number") return na - nb;
    return String(a).localeCompare(String(b), undefined, { numeric: true });
  }
  function cell(row, key) {
    var v = value(row, key);
    if (key === "name") return '<td title="' + esc(row.address) + '">' + esc(v) + "</td>";
    if (key === "status") {
      var marks = row.marks.filter(function (m) {  // a crashed run is not also marked crashed/killed
        return !(row.status === "crashed" && (m.kind === "crashed" || m.kind === "kill"));
      }).map(function (m) {
        return '<span class="mark ' + esc(m.kind) + '" title="' + esc(m.message) + '">' +
          esc(m.kind === "kill" ? "killed" : m.kind) + "</span>";
      }).join("");
      var live = row.alive && row.status === "running" ? ' <span class="mark running">live</span>' : "";
      return "<td>" + esc(v) + live + marks + "</td>";
    }
    if (!row.read && (key === "age_seconds" || key === "last_step" || key === "headline"))
      return '<td class="num pending" title="reading its history…">…</td>';
    if (key === "age_seconds") return '<td class="num">' + esc(row.age ? row.age + " ago" : "") + "</td>";
    if (key === "last_step" || key === "headline") return '<td class="num">' + esc(num(v)) + "</td>";
    return "<td>" + esc(v) + "</td>";
  }
  function renderTable() {
    if (!listing) return;
    var cols = columns(), rows = rowsOf(listing), q = state.q.toLowerCase();
    if (q) rows = rows.filter(function (r) {
      return (r.name + " " + r.adapter + " " + r.status + " " + JSON.stringify(r.params)).toLowerCase().indexOf(q) >= 0;
    });
    if (state.sort) {
      rows.sort(function (a, b) { var c = cmp(value(a, state.sort), value(b, state.sort)); return state.desc ? -c : c; });
    }
    var head = '<tr><th data-key=""></th>' + cols.map(function (c) {
      var cls = state.sort === c[0] ? (state.desc ? "sorted-desc" : "sorted-asc") : "";
      return '<th data-key="' + esc(c[0]) + '" class="' + cls + '">' + esc(c[1]) + "</th>";
    }).join("") + "</tr>";
    $("runs").tHead.innerHTML = head;
    var sel = {}; state.sel.forEach(function (a) { sel[a] = true; });
    var html = [];
    function line(r) {
      html.push('<tr data-address="' + esc(r.address) + '"' + (sel[r.address] ? ' class="selected"' : "") +
        '><td><input type="checkbox" class="pick"' + (sel[r.address] ? " checked" : "") + "></td>" +
        cols.map(function (c) { return cell(r, c[0]); }).join("") + "</tr>");
    }
    if (state.group) {
      var groups = {}, order = [];
      rows.forEach(function (r) {
        var g = r.params[state.group]; g = g === undefined ? "(not set)" : g;
        if (!groups[g]) { groups[g] = []; order.push(g); }
        groups[g].push(r);
      });
      order.sort(function (a, b) { return cmp(a, b); });
      order.forEach(function (g) {
        html.push('<tr class="group" data-group="' + esc(g) + '"><td><input type="checkbox" class="pick-group"></td><td colspan="' +
          cols.length + '">' + esc(state.group) + " = " + esc(g) + " (" + groups[g].length + ")</td></tr>");
        groups[g].forEach(line);
      });
    } else {
      rows.forEach(line);
    }
    listing.errors.forEach(function (e) {
      html.push('<tr class="error"><td></td><td colspan="' + cols.length + '">' + esc(e.source) + ": " +
        esc(e.message) + (e.hint ? " (hint: " + esc(e.hint) + ")" : "") + "</td></tr>");
    });
    $("runs").tBodies[0].innerHTML = html.join("");
    var ld = listing.loading || { done: true };
    $("count").textContent = rows.length + " of " + listing.runs.length + " runs" +
      (state.sel.length ? ", " + state.sel.length + " selected" : "") +
      (ld.done ? "" : " — reading… (" + ld.read + " of " + ld.listed + " histories read)");
    $("compare-btn").disabled = state.sel.length < 2;
  }
  var runsBusy = null, runsAgain = false;
  function loadRuns() {  // one listing request at a time; events that come meanwhile ask once more
    if (runsBusy) { runsAgain = true; return runsBusy; }
    runsBusy = getJSON("api/runs").then(function (data) {
      runsBusy = null;
      if (runsAgain) { runsAgain = false; loadRuns(); }
      listing = data;
      $("found").textContent = data.found_in ? "runs in " + data.found_in : "";
      var g = $("group"), keep = state.group;
      g.innerHTML = '<option value="">—</option>' + data.table.differing.map(function (k) {
        return '<option value="' + esc(k) + '">' + esc(k) + "</option>";
      }).join("");
      g.value = keep;
      renderTable();
      if (!window.rundiffRunsReady && (data.runs.length || !data.loading || data.loading.done)) {
        window.rundiffRunsReadyAt = performance.now();  // the first rows painted
        window.rundiffRunsReady = true;
      }
      if (data.loading && data.loading.done && !window.rundiffRunsComplete) {
        window.rundiffRunsCompleteAt = performance.now();  // every row, every column
        window.rundiffRunsComplete = true;
      }
    });
    return runsBusy;
  }

  // -- the compare view --------------------------------------------------------------------------
  function query(extra) {
    var p = new URLSearchParams();
    state.sel.forEach(function (a) { p.append("a", a); });
    if (state.metric) p.set("metric", state.metric);
    if (state.step !== null) p.set("step", String(state.step));
    Object.keys(extra || {}).forEach(function (k) { p.set(k, extra[k]); });
    return p.toString();
  }
  function loadCompare() {
    if (state.sel.length < 2) { $("compare-panel").hidden = true; return Promise.resolve(); }
    $("compare-panel").hidden = false;
    $("compare-status").textContent = "reading…";
    var mine = ++seq, width = Math.max(300, Math.min(2000, $("plot").clientWidth || 1000));
    var q = query({ smooth: String(state.smooth), width: String(width) });
    $("save").href = "api/report?" + query();
    return Promise.all([getJSON("api/compare?" + q), whenPlotly()]).then(function (got) {
      var d = got[0];
      if (mine !== seq) return;
      if (d.error) {
        $("compare-status").textContent = "";
        $("same-step").innerHTML = '<div class="error-box">' + esc(d.error.message) +
          (d.error.hint ? " (hint: " + esc(d.error.hint) + ")" : "") + "</div>";
        $("reading").innerHTML = ""; Plotly.purge($("plot")); plotted = false;
        window.rundiffCompareReady = (window.rundiffCompareReady || 0) + 1;
        return;
      }
      compareData = d;
      renderCompare();
      $("compare-status").textContent = "";
      window.rundiffCompareReady = (window.rundiffCompareReady || 0) + 1;
    });
  }
  function chosenMetric(c) {
    var names = c.metrics.map(function (m) { return m.metric; });
    if (state.metric && names.indexOf(state.metric) >= 0) return state.metric;
    return c.headline && names.indexOf(c.headline) >= 0 ? c.headline : (c.shown[0] || names[0]);
  }
  function renderCompare() {
    var c = compareData.compare, m = chosenMetric(c);
    $("compare-title").textContent = "student " + c.student.label + " at " + c.x_label + " " + num(c.current_x);
    $("metric").innerHTML = c.metrics.map(function (x) {
      return '<option value="' + esc(x.metric) + '"' + (x.metric === m ? " selected" : "") + ">" +
        esc(x.metric) + " (" + esc(x.group) + (x.goal ? ", " + esc(x.goal) : "") + ")</option>";
    }).join("");
    var slider = $("step"), top = c.student.current_x;
    var maxStep = state.step !== null ? Math.max(state.step, top) : top;
    if (state.step === null) { slider.max = String(top); slider.value = String(top); }
    else { slider.max = String(Math.max(+slider.max || 0, maxStep)); slider.value = String(state.step); }
    $("step-out").textContent = num(c.current_x);
    var metric = c.metrics.filter(function (x) { return x.metric === m; })[0];
    var rows = metric.rows.map(function (r) {
      var v = r.state === "ok" ? num(r.value) + (r.n > 1 ? " ± " + num(r.std) + " (N=" + r.n + ")" : "") : r.state;
      var used = (r.x_used || []).map(num).join(", ");
      return '<tr data-arm="' + esc(r.arm) + '"><td class="' + esc(r.role) + '">' + esc(r.arm) + "</td><td>" + esc(r.role) +
        '</td><td class="num value">' + esc(v) + '</td><td class="num">' + esc(used) + '</td><td class="num">' +
        esc(r.role === "baseline" ? num(r.delta) : "") + "</td><td>" + esc(r.note || "") + "</td></tr>";
    }).join("");
    $("same-step").innerHTML = "<table><thead><tr><th>arm</th><th>role</th><th>" + esc(m) + " at " +
      esc(c.x_label) + " " + esc(num(metric.target)) + "</th><th>" + esc(c.x_label) +
      " used</th><th>Δ vs student</th><th>note</th></tr></thead><tbody>" + rows + "</tbody></table>" +
      (metric.note ? '<div class="muted">' + esc(metric.note) + "</div>" : "") +
      c.conclusion.map(function (s) { return "<p><strong>" + esc(s) + "</strong></p>"; }).join("");
    $("reading").innerHTML = compareData.html;
    drawPlot(m);
  }
  function hexToRgba(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + ((n >> 16) & 255) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha + ")";
  }
  function traceFor(t) {
    var base = { x: t.x, y: t.y, name: t.name, type: "scattergl", mode: "lines",
                 legendgroup: t.arm || "points", connectgaps: false };
    switch (t.kind) {
      case "raw":
        base.line = { color: t.color, width: 1 }; base.opacity = 0.25; base.showlegend = false;
        base.hoverinfo = "skip"; break;
      case "band_lower":
        base.type = "scatter"; base.line = { color: t.color, width: 0 }; base.showlegend = false; base.hoverinfo = "skip"; break;
      case "band_upper":
        base.type = "scatter"; base.line = { color: t.color, width: 0 }; base.fill = "tonexty";
        base.fillcolor = hexToRgba(t.color, 0.18); base.showlegend = false; base.hoverinfo = "skip"; break;
      case "points":
        base.type = "scatter"; base.mode = "markers";
        base.marker = { color: t.color, size: 10, symbol: "diamond-open", line: { width: 2 } };
        base.text = t.hover; base.hovertemplate = "%{text}<extra></extra>"; break;
      default:
        base.line = { color: t.color, width: t.role === "student" ? 3 : 2 };
    }
    return base;
  }
  function drawPlot(metric) {
    var fig = compareData.figures.filter(function (f) { return f.metric === metric; })[0];
    if (!fig) { Plotly.purge($("plot")); plotted = false; return; }
    var goal = fig.goal ? "goal: " + fig.goal : "direction unknown";
    var layout = {
      title: { text: fig.metric + " (" + fig.group + ", " + goal + ")", font: { size: 14 } },
      xaxis: { title: { text: fig.x_label } },
      yaxis: { title: { text: fig.metric }, type: state.log ? "log" : "linear" },
      margin: { l: 60, r: 20, t: 40, b: 45 }, legend: { orientation: "h", y: -0.2 },
      shapes: [], annotations: [], uirevision: state.sel.join("|") + metric
    };
    if (fig.marker_x !== null) {
      layout.shapes.push({ type: "line", xref: "x", yref: "paper", x0: fig.marker_x, x1: fig.marker_x,
                           y0: 0, y1: 1, line: { color: "#111", width: 1.5, dash: "dash" } });
      layout.annotations.push({ x: fig.marker_x, xref: "x", y: 1, yref: "paper", text: fig.marker_label,
                                showarrow: false, yanchor: "bottom", font: { size: 11 } });
    }
    Plotly.react($("plot"), fig.traces.map(traceFor), layout,
                 { displaylogo: false, responsive: true, showLink: false });
    plotted = true;
  }

  // -- events ------------------------------------------------------------------------------------
  function bind() {
    $("filter").value = state.q;
    $("logy").checked = state.log;
    $("smooth").value = String(state.smooth); $("smooth-out").textContent = String(state.smooth);
    $("filter").addEventListener("input", function () { state.q = this.value; writeHash(); renderTable(); });
    $("group").addEventListener("change", function () { state.group = this.value; writeHash(); renderTable(); });
    $("runs").tHead.addEventListener("click", function (e) {
      var key = e.target.getAttribute("data-key"); if (!key) return;
      if (state.sort === key) state.desc = !state.desc; else { state.sort = key; state.desc = false; }
      writeHash(); renderTable();
    });
    $("runs").tBodies[0].addEventListener("change", function (e) {
      var tr = e.target.closest("tr");
      if (e.target.classList.contains("pick")) {
        var a = tr.getAttribute("data-address");
        state.sel = state.sel.filter(function (x) { return x !== a; });
        if (e.target.checked) state.sel.push(a);
      } else if (e.target.classList.contains("pick-group")) {
        var n = tr.nextElementSibling;
        while (n && !n.classList.contains("group")) {
          var addr = n.getAttribute("data-address");
          if (addr) {
            state.sel = state.sel.filter(function (x) { return x !== addr; });
            if (e.target.checked) state.sel.push(addr);
          }
          n = n.nextElementSibling;
        }
      }
      writeHash(); renderTable();
    });
    $("compare-btn").addEventListener("click", function () { state.step = null; writeHash(); loadCompare(); });
    $("clear-btn").addEventListener("click", function () { state.sel = []; state.step = null; writeHash(); renderTable(); loadCompare(); });
    $("metric").addEventListener("change", function () { state.metric = this.value; writeHash(); renderCompare(); });
    $("step").addEventListener("input", function () { $("step-out").textContent = this.value; });
    $("step").addEventListener("change", function () { state.step = parseFloat(this.value); writeHash(); loadCompare(); });
    $("step-now").addEventListener("click", function () { state.step = null; writeHash(); loadCompare(); });
    $("logy").addEventListener("change", function () { state.log = this.checked; writeHash(); if (compareData) renderCompare(); });
    $("smooth").addEventListener("input", function () { $("smooth-out").textContent = this.value; });
    $("smooth").addEventListener("change", function () { state.smooth = parseFloat(this.value) || 0; writeHash(); loadCompare(); });
    window.addEventListener("hashchange", function () { readHash(); renderTable(); loadCompare(); });
    var source = new EventSource("api/events");
    source.addEventListener("open", function () { $("live").classList.add("on"); });
    source.addEventListener("error", function () { $("live").classList.remove("on"); });
    source.addEventListener("changed", function (e) {
      var d = JSON.parse(e.data), mine = {};
      state.sel.forEach(function (a) { mine[a] = true; });
      var hit = d.changed.some(function (a) { return mine[a]; });
      loadRuns();
      if (hit && state.step === null) loadCompare();
      window.rundiffEvents = (window.rundiffEvents || 0) + 1;
    });
  }

  readHash();
  bind();
  loadRuns().then(function () { if (state.sel.length >= 2) loadCompare(); });
})();
