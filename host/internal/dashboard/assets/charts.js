// skillhost dashboard: the traffic charts, small inline SVG drawn from
// /admin/history (every called skill's last 15 minutes in 10 s buckets).
// Text goes in as text nodes; nothing is loaded from elsewhere.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const MIN_WINDOW_BUCKETS = 12; // a young host's charts span at least 2 minutes
const MAX_CARDS = 12;

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// niceMax rounds v up to 1, 2, 3 or 5 times a power of ten.
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 3, 5, 10]) if (m * p >= v * 0.999) return m * p;
  return 10 * p;
}

function fmtPerSec(v) {
  if (v === 0) return "0";
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(0);
  if (v >= 1) return v.toFixed(1).replace(/\.0$/, "");
  return v.toFixed(2).replace(/0$/, "");
}

function fmtMS(v) {
  if (v >= 1000) return (v / 1000).toFixed(v >= 10000 ? 0 : 1).replace(/\.0$/, "") + " s";
  if (v >= 10) return v.toFixed(0) + " ms";
  if (v >= 1) return v.toFixed(1).replace(/\.0$/, "") + " ms";
  return (v * 1000).toFixed(0) + " µs";
}

function clock(t) {
  return new Date(t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

// chartWindow picks the buckets to draw: the last 15 minutes, or since the
// host started when that is more recent (at least 2 minutes).
function chartWindow(hist, uptimeSeconds) {
  const n = hist.buckets, bs = hist.bucket_seconds;
  let count = n;
  if (uptimeSeconds >= 0) count = Math.min(n, Math.max(MIN_WINDOW_BUCKETS, Math.ceil(uptimeSeconds / bs) + 1));
  return { from: n - count, count, bs, start: Date.parse(hist.start) + (n - count) * bs * 1000, clipped: count < n };
}

// plotFrame draws the axes of a chart of w×h with y from 0 to ymax
// (labelled with fmt) over the window; it returns the plot's geometry.
function plotFrame(g, w, h, win, ymax, fmt) {
  const left = 44, right = 6, top = 7, bottom = 16;
  const pw = w - left - right, ph = h - top - bottom;
  for (const f of [0, 0.5, 1]) {
    const y = top + ph - f * ph;
    g.append(svg("line", { class: f === 0 ? "axis" : "grid", x1: left, x2: left + pw, y1: y, y2: y }));
    g.append(svg("text", { class: "tick", x: left - 4, y: y + 3.5, "text-anchor": "end" }, fmt(f * ymax)));
  }
  // x ticks every 1, 2 or 5 minutes, "now" at the right edge
  const minutes = win.count * win.bs / 60;
  const step = minutes <= 3 ? 1 : minutes <= 8 ? 2 : 5;
  for (let m = 0; m <= minutes + 1e-9; m += step) {
    const x = left + pw - (m * 60 / win.bs) / win.count * pw;
    if (x < left - 0.5) break;
    g.append(svg("line", { class: "tickmark", x1: x, x2: x, y1: top + ph, y2: top + ph + 3 }));
    g.append(svg("text", { class: "tick", x, y: h - 3, "text-anchor": m === 0 ? "end" : "middle" }, m === 0 ? "now" : `−${m}m`));
  }
  return { left, top, pw, ph, bw: pw / win.count };
}

// barsChart: calls per second in each bucket, stacked served / failed /
// rate-limited. s has calls, errors, rate_limited arrays.
function barsChart(s, win, w, h) {
  const g = svg("svg", { class: "chart bars", viewBox: `0 0 ${w} ${h}`, role: "img" });
  let peak = 0;
  for (let i = win.from; i < win.from + win.count; i++) peak = Math.max(peak, s.calls[i] / win.bs);
  const ymax = niceMax(peak);
  const f = plotFrame(g, w, h, win, ymax, fmtPerSec);
  const gap = f.bw > 4 ? 1 : 0;
  for (let j = 0; j < win.count; j++) {
    const i = win.from + j, calls = s.calls[i];
    if (!calls) continue;
    const limited = s.rate_limited[i], failed = s.errors[i] - limited, ok = calls - s.errors[i];
    const x = f.left + j * f.bw, bw = Math.max(f.bw - gap, 0.8);
    const col = svg("g", { class: "bucket" });
    let y = f.top + f.ph;
    for (const [n, cls] of [[ok, "bar-ok"], [failed, "bar-err"], [limited, "bar-limited"]]) {
      if (n <= 0) continue;
      const bh = Math.max(n / win.bs / ymax * f.ph, 1);
      y -= bh;
      col.append(svg("rect", { class: cls, x, y, width: bw, height: bh }));
    }
    const t0 = win.start + j * win.bs * 1000;
    const lat = s.latency_avg_ms ? ` · mean ${fmtMS(s.latency_avg_ms[i])}, highest ${fmtMS(s.latency_max_ms[i])}` : "";
    col.append(svg("title", {}, `${clock(t0)}–${clock(t0 + win.bs * 1000)}: ${calls} calls, ${s.errors[i]} failed` +
      (limited ? ` (${limited} rate-limited)` : "") + lat));
    g.append(col);
  }
  return g;
}

// latencyChart: the mean latency of the calls that ran in each bucket (a
// line) and the highest (dots), in milliseconds.
function latencyChart(s, win, w, h) {
  const g = svg("svg", { class: "chart latency", viewBox: `0 0 ${w} ${h}`, role: "img" });
  let peak = 0;
  for (let i = win.from; i < win.from + win.count; i++) peak = Math.max(peak, s.latency_max_ms[i]);
  const ymax = niceMax(peak);
  const f = plotFrame(g, w, h, win, ymax, (v) => v === 0 ? "0" : fmtMS(v).replace(" ", ""));
  let d = "", open = false;
  const dots = [];
  const yOf = (v) => f.top + f.ph - Math.min(v / ymax, 1) * f.ph;
  for (let j = 0; j < win.count; j++) {
    const i = win.from + j, avg = s.latency_avg_ms[i], mx = s.latency_max_ms[i];
    const x = f.left + (j + 0.5) * f.bw;
    if (!(avg > 0)) { open = false; continue; }
    d += (open ? " L" : " M") + x.toFixed(1) + " " + yOf(avg).toFixed(1);
    open = true;
    dots.push(svg("circle", { class: "lat-max", cx: x, cy: yOf(mx), r: 2.4 }),
      svg("circle", { class: "lat-avg-dot", cx: x, cy: yOf(avg), r: 2 },
        svg("title", {}, `${clock(win.start + j * win.bs * 1000)}: mean ${fmtMS(avg)}, highest ${fmtMS(mx)}`)));
  }
  if (d) g.append(svg("path", { class: "lat-avg", d: d.trim() }));
  g.append(...dots);
  return g;
}

// windowTotals sums a series over the window.
function windowTotals(s, win) {
  const t = { calls: 0, errors: 0, limited: 0, latSum: 0, latN: 0, latMax: 0 };
  for (let i = win.from; i < win.from + win.count; i++) {
    t.calls += s.calls[i]; t.errors += s.errors[i]; t.limited += s.rate_limited[i];
    const ran = s.calls[i] - s.rate_limited[i];
    if (ran > 0 && s.latency_avg_ms[i] > 0) { t.latSum += s.latency_avg_ms[i] * ran; t.latN += ran; }
    t.latMax = Math.max(t.latMax, s.latency_max_ms[i]);
  }
  return t;
}

// totalSeries adds up every skill's calls, errors and refusals.
function totalSeries(hist) {
  const n = hist.buckets, z = () => new Array(n).fill(0);
  const t = { calls: z(), errors: z(), rate_limited: z() };
  for (const s of hist.skills) {
    for (let i = 0; i < n; i++) { t.calls[i] += s.calls[i]; t.errors[i] += s.errors[i]; t.rate_limited[i] += s.rate_limited[i]; }
  }
  return t;
}

function summaryLine(t) {
  const parts = [`${t.calls} calls`];
  parts.push(t.errors ? `${t.errors} failed (${(100 * t.errors / t.calls).toFixed(t.errors * 100 < t.calls ? 1 : 0)}%)` : "no failures");
  if (t.limited) parts.push(`${t.limited} rate-limited`);
  if (t.latN) parts.push(`mean ${fmtMS(t.latSum / t.latN)}`);
  return parts.join(" · ");
}

// renderCharts draws the host's total and one card per skill called in
// the window (the busiest first). rules maps "plugin/skill" to the skill's
// rate limits (from /admin/plugins).
function renderCharts(hist, uptimeSeconds, rules) {
  const win = chartWindow(hist, uptimeSeconds);
  const minutes = Math.round(win.count * win.bs / 60);
  document.getElementById("traffic-window").textContent =
    win.clipped ? `since the host started (${minutes} min window; 15 min once up that long)` : "last 15 minutes, 10 s buckets";
  const host = document.getElementById("host-chart");
  const total = totalSeries(hist);
  const tt = windowTotals({ ...total, latency_avg_ms: new Array(hist.buckets).fill(0), latency_max_ms: new Array(hist.buckets).fill(0) }, win);
  host.replaceChildren(
    el("div", { class: "card-head" }, el("span", { class: "card-title" }, "all skills"), el("span", { class: "card-sum" }, summaryLine(tt))),
    el("div", { class: "chart-label" }, "calls per second"), barsChart(total, win, 1000, 110));
  host.dataset.calls = String(tt.calls);

  const called = hist.skills.map((s) => ({ s, t: windowTotals(s, win) })).filter((x) => x.t.calls > 0);
  called.sort((a, b) => b.t.calls - a.t.calls || (a.s.plugin + "/" + a.s.skill).localeCompare(b.s.plugin + "/" + b.s.skill));
  const cards = called.slice(0, MAX_CARDS).map(({ s, t }) => {
    const key = s.plugin + "/" + s.skill;
    const head = el("div", { class: "card-head" }, el("span", { class: "card-title", title: key }, s.skill, el("span", { class: "muted" }, " " + s.plugin)));
    for (const r of rules.get(key) || []) head.append(el("span", { class: "rule", title: `${r.limit}: ${r.skill}` }, `≤ ${r.rate} per ${r.per}`));
    return el("div", { class: "chart-card", "data-skill": key, "data-calls": String(t.calls) },
      head, el("div", { class: "card-sum" }, summaryLine(t)),
      el("div", { class: "chart-label" }, "calls per second"), barsChart(s, win, 320, 86),
      el("div", { class: "chart-label" }, "latency"), latencyChart(s, win, 320, 70));
  });
  document.getElementById("charts").replaceChildren(...cards);
  const idle = hist.skills.length - called.length, more = called.length - cards.length;
  document.getElementById("charts-note").textContent = [
    more > 0 ? `${more} more skills with calls are in the table below.` : "",
    idle > 0 ? `${idle} skills without calls in this window are not drawn.` : ""].filter(Boolean).join(" ");
}
