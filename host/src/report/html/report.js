/* llm-triage HTML report: sorting, filtering and the SVG charts, all drawn from the
   report's embedded JSON (script.report-data, the exact --format json text). No
   network, no library: charts are SVG markup built here. The page works without this
   script (the tables are plain HTML); when it has run, <html> carries
   data-script="done" and data-errors (uncaught errors counted), which the browser
   tests read. */
(function () {
  "use strict";
  var root = document.documentElement;
  var errors = 0;
  function countError() {
    errors += 1;
    root.setAttribute("data-errors", String(errors));
  }
  window.addEventListener("error", countError);

  // ---- small helpers ----
  var ENTITIES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" };
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) { return ENTITIES[c]; });
  }
  function fmt(v, d) { return Number(v).toFixed(d); }
  function us(v) {
    var a = Math.abs(v);
    if (a >= 1e6) { return fmt(v / 1e6, 3) + " s"; }
    if (a >= 1e3) { return fmt(v / 1e3, 3) + " ms"; }
    return fmt(v, 3) + " µs";
  }
  /* A gap-histogram bin as the table beside the chart names it (figures.rs
     histogram_table): "0 – 5 µs", "≥ 10000 µs". */
  function binLabel(b) {
    return b.hi_us === null ? "≥ " + String(b.lo_us) + " µs"
      : String(b.lo_us) + " – " + String(b.hi_us) + " µs";
  }
  /* JSON pointer lookup (RFC 6901), for data-path cells. */
  function pointer(doc, path) {
    var parts = path.split("/").slice(1);
    var v = doc;
    for (var i = 0; i < parts.length && v !== undefined && v !== null; i++) {
      v = v[parts[i].replace(/~1/g, "/").replace(/~0/g, "~")];
    }
    return v;
  }
  var PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"];
  function colour(i) { return PALETTE[i % PALETTE.length]; }
  function svg(w, h, body) {
    return "<svg viewBox=\"0 0 " + w + " " + h + "\" role=\"img\">" + body + "</svg>";
  }
  function rect(x, y, w, h, fill, tip) {
    return "<rect x=\"" + fmt(x, 2) + "\" y=\"" + fmt(y, 2) + "\" width=\"" + fmt(Math.max(w, 0), 2) +
      "\" height=\"" + fmt(Math.max(h, 0), 2) + "\" fill=\"" + fill + "\"><title>" + esc(tip) +
      "</title></rect>";
  }
  function text(x, y, s, anchor) {
    return "<text x=\"" + fmt(x, 1) + "\" y=\"" + fmt(y, 1) + "\" text-anchor=\"" + (anchor || "start") +
      "\">" + esc(s) + "</text>";
  }
  function line(x1, y1, x2, y2, cls) {
    return "<line class=\"" + (cls || "axis") + "\" x1=\"" + fmt(x1, 1) + "\" y1=\"" + fmt(y1, 1) +
      "\" x2=\"" + fmt(x2, 1) + "\" y2=\"" + fmt(y2, 1) + "\"></line>";
  }
  function legend(entries) {
    return "<div class=\"legend\">" + entries.map(function (e) {
      return "<span style=\"--swatch:" + e[1] + "\">" + esc(e[0]) + "</span>";
    }).join("") + "</div>";
  }

  // ---- charts: each returns HTML for its div, or "" when it has nothing to draw ----

  /* The stage's kernel rows summed per family as one stacked bar; the rest of the stage
     (rows below the table's share bar) in grey. */
  function families(stage) {
    var sums = {};
    var order = [];
    stage.kernels.forEach(function (k) {
      if (!(k.family in sums)) { sums[k.family] = 0; order.push(k.family); }
      sums[k.family] += k.gpu_time_us;
    });
    order.sort(function (a, b) { return sums[b] - sums[a]; });
    var total = stage.total_gpu_time_us;
    if (!(total > 0)) { return ""; }
    var shown = order.reduce(function (s, f) { return s + sums[f]; }, 0);
    var parts = order.map(function (f, i) { return [f, sums[f], colour(i)]; });
    if (total - shown > total * 1e-4) { parts.push(["rows below the table", total - shown, "#c8cdd2"]); }
    var W = 1000, x = 0, body = "";
    parts.forEach(function (p) {
      var w = W * p[1] / total;
      body += rect(x, 0, w, 36, p[2], p[0] + ": " + us(p[1]) + " (" + fmt(100 * p[1] / total, 1) + "%)");
      x += w;
    });
    return svg(W, 36, body) + legend(parts.map(function (p) {
      return [p[0] + " " + fmt(100 * p[1] / total, 1) + "%", p[2]];
    }));
  }

  var STEP_PARTS = [["compute_us", "compute", "#4e79a7"], ["exposed_comm_us", "exposed comm", "#e15759"],
    ["memcpy_us", "memcpy", "#edc948"], ["launch_idle_us", "launch idle", "#f28e2b"],
    ["sync_idle_us", "sync idle", "#b07aa1"], ["graph_gap_us", "graph gap", "#76b7b2"],
    ["host_gap_us", "host gap", "#9c755f"]];

  /* One bar per step, its height the step's wall time, stacked by its parts. */
  function waterfall(stage) {
    var steps = stage.timeline ? stage.timeline.steps : [];
    if (!steps.length) { return ""; }
    var max = steps.reduce(function (m, s) { return Math.max(m, s.wall_us); }, 0);
    if (!(max > 0)) { return ""; }
    var W = 1000, H = 220, L = 70, B = 20, plotW = W - L - 5, plotH = H - B - 8;
    var bw = Math.min(plotW / steps.length, 60);
    var body = line(L, 8, L, 8 + plotH) + line(L, 8 + plotH, W - 5, 8 + plotH);
    body += text(L - 4, 14, us(max), "end") + text(L - 4, 8 + plotH, "0", "end");
    steps.forEach(function (s, i) {
      var y = 8 + plotH;
      STEP_PARTS.forEach(function (p) {
        var h = plotH * s[p[0]] / max;
        if (h <= 0) { return; }
        y -= h;
        body += rect(L + i * bw, y, Math.max(bw - (bw > 3 ? 1 : 0), 0.5), h, p[2],
          "step " + s.index + " " + s.label + ": " + p[1] + " " + us(s[p[0]]) + " of " + us(s.wall_us));
      });
    });
    body += text(L, H - 4, "step 0") + text(L + bw * steps.length, H - 4, "step " + steps[steps.length - 1].index, "end");
    return svg(W, H, body) + legend(STEP_PARTS.map(function (p) { return [p[1], p[2]]; }));
  }

  /* The idle-gap histogram: gaps per length bin, the bin's total time on hover. */
  function histogram(stage) {
    var bins = stage.timeline ? stage.timeline.histogram : [];
    var max = bins.reduce(function (m, b) { return Math.max(m, b.count); }, 0);
    if (!(max > 0)) { return ""; }
    var W = 1000, H = 180, L = 50, B = 22, plotH = H - B - 8;
    var bw = (W - L - 5) / bins.length;
    var body = line(L, 8, L, 8 + plotH) + line(L, 8 + plotH, W - 5, 8 + plotH);
    body += text(L - 4, 14, String(max), "end") + text(L - 4, 8 + plotH, "0", "end");
    bins.forEach(function (b, i) {
      var h = plotH * b.count / max;
      var label = binLabel(b);
      body += rect(L + i * bw + 4, 8 + plotH - h, bw - 8, h, "#f28e2b",
        label + ": " + b.count + " gaps, " + us(b.total_us));
      body += text(L + (i + 0.5) * bw, H - 6, label, "middle");
    });
    return svg(W, H, body);
  }

  /* The stage's GPU time by role, one bar per role. */
  function roles(stage) {
    var rows = stage.roles || [];
    if (!rows.length) { return ""; }
    var total = stage.total_gpu_time_us;
    var W = 1000, x = 0, body = "";
    rows.forEach(function (r, i) {
      var w = W * r.gpu_time_us / total;
      body += rect(x, 0, w, 36, colour(i), r.role + ": " + us(r.gpu_time_us) + " (" + fmt(r.share_pct, 1) + "%)");
      x += w;
    });
    return svg(W, 36, body) + legend(rows.map(function (r, i) {
      return [r.role + " " + fmt(r.share_pct, 1) + "%", colour(i)];
    }));
  }

  var CAUSES = { launch: "#f28e2b", sync: "#b07aa1", graph: "#76b7b2", host: "#9c755f" };

  /* The representative step: a lane per stream, each op a bar from its offset, the idle
     stretches (no op on any stream) as bands coloured by cause behind every lane. */
  function steptimeline(stage) {
    var rep = stage.timeline ? stage.timeline.representative_step : null;
    if (!rep || !rep.lanes.length || !(rep.wall_us > 0)) { return ""; }
    var W = 1000, L = 90, laneH = 26, T = 18, R = 5;
    var H = T + laneH * rep.lanes.length + 22;
    function px(offset) { return L + (W - L - R) * offset / rep.wall_us; }
    var body = "";
    rep.gaps.forEach(function (g) {
      body += rect(px(g.offset_us), T, Math.max(px(g.offset_us + g.dur_us) - px(g.offset_us), 0.5),
        laneH * rep.lanes.length, CAUSES[g.cause] || "#c8cdd2",
        "idle " + us(g.dur_us) + " at +" + us(g.offset_us) + ": " + g.cause).replace("<rect", "<rect opacity=\"0.55\"");
    });
    rep.lanes.forEach(function (lane, i) {
      var y = T + i * laneH;
      body += text(L - 6, y + laneH / 2 + 4, "stream " + lane.stream, "end");
      lane.ops.forEach(function (op) {
        var x = px(op.offset_us);
        body += rect(x, y + 3, Math.max(px(op.offset_us + op.dur_us) - x, 0.5), laneH - 6, colour(op.name),
          rep.names[op.name] + ": " + us(op.dur_us) + " at +" + us(op.offset_us));
      });
    });
    body += line(L, T + laneH * rep.lanes.length, W - R, T + laneH * rep.lanes.length);
    body += text(L, H - 4, "+0") + text(W - R, H - 4, "+" + us(rep.wall_us), "end");
    body += text(L, 12, "step " + rep.step + " (" + stage.timeline.steps[rep.step].label + "), " +
      us(rep.wall_us) + " wall" + (rep.ops_left_out ? ", " + rep.ops_left_out + " ops not drawn" : ""));
    return svg(W, H, body) + legend(Object.keys(CAUSES).map(function (c) { return ["idle: " + c, CAUSES[c]]; }));
  }

  /* Layer x role heatmap: a row per role, a column per layer, the cell's shade its share
     of the largest cell. */
  function heatmap(stage) {
    var rows = stage.layers ? stage.layers.rows : [];
    var roleNames = [];
    rows.forEach(function (r) {
      (r.roles || []).forEach(function (x) { if (roleNames.indexOf(x.role) < 0) { roleNames.push(x.role); } });
    });
    if (!rows.length || !roleNames.length) { return ""; }
    var max = 0;
    rows.forEach(function (r) { (r.roles || []).forEach(function (x) { max = Math.max(max, x.gpu_time_us); }); });
    var W = 1000, L = 110, T = 6, cellH = 18, B = 18;
    var cellW = (W - L - 5) / rows.length;
    var H = T + cellH * roleNames.length + B;
    var body = "";
    roleNames.forEach(function (role, j) {
      var y = T + j * cellH;
      body += text(L - 6, y + cellH - 5, role, "end");
      rows.forEach(function (r, i) {
        var cell = (r.roles || []).filter(function (x) { return x.role === role; })[0];
        var v = cell ? cell.gpu_time_us : 0;
        var shade = max > 0 ? v / max : 0;
        var fill = v > 0 ? "rgba(47,111,178," + fmt(0.08 + 0.92 * shade, 3) + ")" : "none";
        body += rect(L + i * cellW, y, Math.max(cellW - 1, 0.5), cellH - 2, fill,
          "layer " + r.index + ", " + role + ": " + us(v));
      });
    });
    body += text(L, H - 4, "layer 0") + text(W - 5, H - 4, "layer " + (rows.length - 1), "end");
    return svg(W, H, body);
  }

  /* Log-log roofline: each kernel row with an intensity and a rate is a point (a ring
     when under-filled); the device's bandwidth roof and its compute roof per dtype the
     points use. */
  function roofline(stage, report) {
    var pts = stage.kernels.filter(function (k) {
      var r = k.roofline;
      return r && r.intensity > 0 && r.tflops_per_s > 0;
    });
    if (!pts.length) { return ""; }
    var dev = report.device || null;
    var bw = dev && dev.hbm_tb_per_s ? dev.hbm_tb_per_s : null;
    var dtypes = [];
    pts.forEach(function (k) {
      var d = k.roofline.dtype;
      if (d && dev && dev.peak_tflops[d] && dtypes.indexOf(d) < 0) { dtypes.push(d); }
    });
    var xs = pts.map(function (k) { return k.roofline.intensity; });
    var ys = pts.map(function (k) { return k.roofline.tflops_per_s; });
    dtypes.forEach(function (d) { ys.push(dev.peak_tflops[d]); if (bw) { xs.push(dev.peak_tflops[d] / bw); } });
    var lx0 = Math.floor(Math.log10(Math.min.apply(null, xs)) - 0.3);
    var lx1 = Math.ceil(Math.log10(Math.max.apply(null, xs)) + 0.3);
    var ly0 = Math.floor(Math.log10(Math.min.apply(null, ys)) - 0.3);
    var ly1 = Math.ceil(Math.log10(Math.max.apply(null, ys)) + 0.2);
    var W = 1000, H = 420, L = 70, B = 36, T = 10, R = 10;
    function px(v) { return L + (W - L - R) * (Math.log10(v) - lx0) / (lx1 - lx0); }
    function py(v) { return T + (H - T - B) * (1 - (Math.log10(v) - ly0) / (ly1 - ly0)); }
    var body = line(L, T, L, H - B) + line(L, H - B, W - R, H - B);
    for (var e = lx0; e <= lx1; e++) { body += text(px(Math.pow(10, e)), H - B + 14, "1e" + e, "middle"); }
    for (var f = ly0; f <= ly1; f++) { body += text(L - 4, py(Math.pow(10, f)) + 4, "1e" + f, "end"); }
    body += text((L + W) / 2, H - 4, "arithmetic intensity (FLOP/byte)", "middle");
    body += text(L + 4, T + 10, "TFLOP/s");
    dtypes.forEach(function (d) {
      var peak = dev.peak_tflops[d];
      var x0 = Math.pow(10, lx0), x1 = Math.pow(10, lx1);
      var pts2 = [];
      if (bw) {
        var ridge = peak / bw;
        var start = Math.max(x0, Math.pow(10, ly0) / bw);
        pts2.push([start, bw * start], [ridge, peak]);
      } else {
        pts2.push([x0, peak]);
      }
      pts2.push([x1, peak]);
      body += "<polyline class=\"roof\" points=\"" + pts2.map(function (p) {
        return fmt(px(p[0]), 1) + "," + fmt(py(p[1]), 1);
      }).join(" ") + "\"><title>" + esc(d + " roof: " + peak + " TFLOP/s" + (bw ? ", " + bw + " TB/s" : "")) +
        "</title></polyline>";
      body += text(px(x1) - 4, py(peak) - 4, d + " " + peak + " TFLOP/s", "end");
    });
    pts.forEach(function (k, i) {
      var r = k.roofline;
      var under = r.bound === "under-filled";
      var tip = k.name + ": " + fmt(r.intensity, 2) + " FLOP/B, " + fmt(r.tflops_per_s, 3) + " TFLOP/s, " +
        (r.pct_of_peak === null ? "" : fmt(r.pct_of_peak, 1) + "% of peak, ") + r.bound;
      body += "<circle cx=\"" + fmt(px(r.intensity), 1) + "\" cy=\"" + fmt(py(r.tflops_per_s), 1) +
        "\" r=\"" + (under ? 6 : 4.5) + "\" fill=\"" + (under ? "none" : colour(i)) + "\" stroke=\"" +
        (under ? "#c0392b" : colour(i)) + "\" stroke-width=\"2\"><title>" + esc(tip) + "</title></circle>";
    });
    return svg(W, H, body);
  }

  /* --all-ranks: per stage, one row per rank: its collective wait as a bar, and a dot
     at each step in which it arrived last (radius by lateness). */
  function ranks(report) {
    var rows = report.ranks || [];
    if (!rows.length) { return ""; }
    var stages = [];
    rows.forEach(function (r) { r.stages.forEach(function (s) { if (stages.indexOf(s.stage) < 0) { stages.push(s.stage); } }); });
    var maxWait = 0, maxStep = 0, maxLate = 0;
    rows.forEach(function (r) { r.stages.forEach(function (s) { maxWait = Math.max(maxWait, s.wait_us); }); });
    (report.stragglers || []).forEach(function (s) { maxStep = Math.max(maxStep, s.step); maxLate = Math.max(maxLate, s.late_us); });
    var W = 1000, rowH = 22, L = 150, mid = 450, out = "";
    stages.forEach(function (stage) {
      var H = rowH * rows.length + 24, body = "";
      body += text(L, 12, "collective wait") + text(mid + 10, 12, "late steps (step index →)");
      rows.forEach(function (r, i) {
        var y = 18 + i * rowH;
        var s = r.stages.filter(function (x) { return x.stage === stage; })[0];
        body += text(L - 6, y + 14, "rank " + r.rank, "end");
        if (s) {
          var w = maxWait > 0 ? (mid - L - 10) * s.wait_us / maxWait : 0;
          body += rect(L, y + 3, w, rowH - 6, colour(i), "rank " + r.rank + " " + stage + ": wait " +
            us(s.wait_us) + " of " + us(s.comm_us) + " in collectives");
        }
        body += line(mid + 10, y + rowH / 2, W - 10, y + rowH / 2);
        (report.stragglers || []).forEach(function (st) {
          if (st.stage !== stage || st.rank !== r.rank) { return; }
          var cx = mid + 10 + (W - mid - 30) * (maxStep > 0 ? st.step / maxStep : 0.5);
          var rad = 2 + 6 * (maxLate > 0 ? st.late_us / maxLate : 0);
          body += "<circle cx=\"" + fmt(cx, 1) + "\" cy=\"" + fmt(y + rowH / 2, 1) + "\" r=\"" + fmt(rad, 1) +
            "\" fill=\"" + colour(i) + "\"><title>" + esc("step " + st.step + ": rank " + st.rank + " " +
            us(st.late_us) + " late at " + st.family + " #" + st.collective + " (" + st.cause + ": " +
            st.detail + ")") + "</title></circle>";
        });
      });
      out += "<h4>" + esc(stage) + "</h4>" + svg(W, H, body);
    });
    return out;
  }

  /* diff: the base step, each waterfall row's delta as a floating bar (red slower,
     green faster), then the new step. */
  function diffwaterfall(stage) {
    var rows = stage.rows.filter(function (r) { return r.delta_ns !== 0; });
    var W = 1000, L = 260, rowH = 16, T = 4, R = 10;
    var H = T + rowH * (rows.length + 2) + 18;
    var lo = 0, hi = Math.max(stage.base_step_us, stage.new_step_us), run = stage.base_step_us;
    rows.forEach(function (r) { run += r.delta_us; lo = Math.min(lo, run); hi = Math.max(hi, run); });
    if (!(hi > lo)) { return ""; }
    function px(v) { return L + (W - L - R) * (v - lo) / (hi - lo); }
    var body = "", y = T;
    function bar(label, from, to, fill, tip) {
      body += text(L - 6, y + rowH - 4, label.length > 40 ? label.slice(0, 39) + "…" : label, "end");
      body += rect(px(Math.min(from, to)), y + 2, Math.max(Math.abs(px(to) - px(from)), 1), rowH - 4, fill, tip);
      y += rowH;
    }
    bar("base step", 0, stage.base_step_us, "#4e79a7", "base step " + us(stage.base_step_us));
    run = stage.base_step_us;
    rows.forEach(function (r) {
      bar(r.key, run, run + r.delta_us, r.delta_us > 0 ? "#e15759" : "#59a14f",
        r.key + ": " + us(r.base_us) + " → " + us(r.new_us) + " (" + (r.delta_us > 0 ? "+" : "") + us(r.delta_us) + ")");
      run += r.delta_us;
    });
    bar("new step", 0, stage.new_step_us, "#4e79a7", "new step " + us(stage.new_step_us));
    body += line(px(0), T, px(0), y);
    body += text(px(lo), H - 4, us(lo)) + text(px(hi), H - 4, us(hi), "end");
    return svg(W, H, body);
  }

  var STAGE_CHARTS = { families: families, waterfall: waterfall, histogram: histogram, roles: roles,
    steptimeline: steptimeline, heatmap: heatmap, roofline: roofline };

  /* Draws every chart of one article from its JSON; a chart with nothing to draw takes
     its figure away rather than leave it empty. */
  function drawCharts(article, report) {
    var charts = article.querySelectorAll("div.chart[data-chart]");
    Array.prototype.forEach.call(charts, function (div) {
      var kind = div.getAttribute("data-chart");
      var html = "";
      if (kind === "ranks") {
        html = ranks(report);
      } else if (kind === "diffwaterfall") {
        var diffStage = report.diff ? report.diff.stages[Number(div.getAttribute("data-stage"))] : null;
        html = diffStage ? diffwaterfall(diffStage) : "";
      } else if (STAGE_CHARTS[kind]) {
        var stage = report.stages[Number(div.getAttribute("data-stage"))];
        html = stage ? STAGE_CHARTS[kind](stage, report) : "";
      }
      if (html) {
        div.innerHTML = html;
      } else if (div.parentNode && div.parentNode.tagName === "FIGURE") {
        div.parentNode.parentNode.removeChild(div.parentNode);
      }
    });
  }

  /* Click a header to sort by that column; a cell naming a JSON field sorts by its exact
     value, any other by its number or its text. */
  function sortable(table, report) {
    var heads = table.querySelectorAll("thead th");
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        var down = th.getAttribute("aria-sort") !== "descending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", down ? "descending" : "ascending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var key = function (row) {
          var cell = row.cells[col];
          if (!cell) { return ""; }
          var path = cell.getAttribute("data-path");
          if (path && report) {
            var v = pointer(report, path);
            if (typeof v === "number") { return v; }
          }
          var n = parseFloat(cell.textContent);
          return cell.classList.contains("num") && !isNaN(n) ? n : cell.textContent.toLowerCase();
        };
        rows.sort(function (a, b) {
          var ka = key(a), kb = key(b);
          var c = ka < kb ? -1 : ka > kb ? 1 : 0;
          return down ? -c : c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }

  /* A filter box hides the rows of its table that do not contain its text (name,
     full name on hover, family, location). */
  function filterable(input) {
    var table = document.getElementById(input.getAttribute("data-table"));
    if (!table) { return; }
    var count = input.nextElementSibling;
    input.addEventListener("input", function () {
      var q = input.value.toLowerCase();
      var shown = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var name = row.cells[0];
        var hay = (row.textContent + " " + (name ? name.getAttribute("title") || "" : "")).toLowerCase();
        var keep = hay.indexOf(q) >= 0;
        row.classList.toggle("hidden", !keep);
        if (keep) { shown += 1; }
      });
      if (count) { count.textContent = q ? shown + " of " + table.tBodies[0].rows.length + " rows" : ""; }
    });
  }

  function main() {
    var articles = document.querySelectorAll("article[data-report]");
    Array.prototype.forEach.call(articles, function (article) {
      var data = document.getElementById(article.getAttribute("data-report"));
      var report = data ? JSON.parse(data.textContent) : null;
      if (report) { drawCharts(article, report); }
      Array.prototype.forEach.call(article.querySelectorAll("table.sortable"), function (t) { sortable(t, report); });
      Array.prototype.forEach.call(article.querySelectorAll("input.filter"), filterable);
    });
    root.setAttribute("data-errors", String(errors));
    root.setAttribute("data-script", "done");
  }

  try {
    main();
  } catch (e) {
    countError();
    throw e;
  }
}());
