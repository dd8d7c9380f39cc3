// skillhost dashboard: polls /admin/status, /admin/plugins and
// /admin/history, reads the Agent Card and follows /events for plan
// progress. Every value is inserted as text (plugin names and error
// messages come from plugins and clients). charts.js draws the charts,
// table.js the agents table.
"use strict";

const POLL_MS = 2000;
const HISTORY_EVERY = 2; // polls between two readings of /admin/history
const KEY_ITEM = "skillhost-api-key";
const state = { prev: null, plans: new Map(), eventsOpen: false, polls: 0, plugins: null, uptime: -1, history: null,
  totals: new Map(), rates: new Map(), pools: new Map() };

// el builds an element; children are nodes or strings (inserted as text).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

const $ = (id) => document.getElementById(id);
const setText = (id, v) => { $(id).textContent = v; };

function bytes(n) {
  if (!n) return "0 B";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (n >= 10 || i === 0 ? n.toFixed(0) : n.toFixed(1)) + " " + units[i];
}

function rate(n) { return n >= 10 ? n.toFixed(0) : n.toFixed(1); }

function duration(s) {
  if (s < 120) return s + " s";
  if (s < 7200) return Math.floor(s / 60) + " min";
  if (s < 172800) return Math.floor(s / 3600) + " h " + Math.floor(s % 3600 / 60) + " min";
  return Math.floor(s / 86400) + " days";
}

function headers() {
  const key = sessionStorage.getItem(KEY_ITEM);
  return key ? { "Authorization": "Bearer " + key, "Accept": "application/json" } : { "Accept": "application/json" };
}

class AuthNeeded extends Error {}

// getJSON reads a guarded document; 401/403 ask for a key.
async function getJSON(path) {
  const resp = await fetch(path, { headers: headers(), cache: "no-store" });
  if (resp.status === 401 || resp.status === 403) {
    let why = "HTTP " + resp.status;
    try { const body = await resp.json(); why = body.error.message + " (" + (body.error.data || {}).reason + ")"; } catch (_) { /* not JSON */ }
    throw new AuthNeeded(why);
  }
  if (!resp.ok) throw new Error(path + ": HTTP " + resp.status);
  return resp.json();
}

function askKey(why) {
  $("key-form").hidden = false;
  setText("key-reason", "This host needs an API key with the scope method:admin (or *): " + why);
  setHealth("key needed", "", "");
}

function setHealth(text, cls, detail) {
  setText("health", text);
  $("health").className = "badge " + cls;
  setText("health-detail", detail);
  $("health-detail").title = detail;
}

function renderStatus(st) {
  setText("version", "v" + st.version);
  setHealth(st.health, st.health, st.health_error || "");
  setText("uptime", "up " + duration(st.uptime_seconds));
  setText("updated", "updated " + new Date(st.time).toLocaleTimeString([], { hour12: false }));
  state.uptime = st.uptime_seconds;
  const p = st.plugins;
  const all = Object.values(p).reduce((a, b) => a + b, 0);
  setText("sum-plugins", `${p.loaded + p.reloading} of ${all}`);
  setText("sum-plugins-sub", [p.failed ? `${p.failed} failed` : "", p.not_ready ? `${p.not_ready} not ready` : "",
    p.loading ? `${p.loading} loading` : ""].filter(Boolean).join(", ") || "all serving");
  $("sum-plugins-sub").className = "sub" + (p.failed || p.not_ready ? " bad" : "");
  const inst = st.pool.instances;
  setText("sum-instances", `${inst.idle} / ${inst.busy}`);
  setText("sum-discarded", String(inst.discarded));
  setText("sum-budget", bytes(st.pool.reserved_bytes));
  setText("sum-budget-sub", `reserved of ${bytes(st.pool.budget_bytes)}`);
  $("sum-budget-sub").title = "reserved by live instances and running calls, of sandbox.max_live_bytes";
  setText("sum-failures", String(st.recent_failures.total));
  renderProblems(st.problems || []);

  // rates from two readings
  const now = Date.parse(st.time);
  const cur = new Map(st.skills.map((s) => [s.plugin + "/" + s.skill, s]));
  const rates = new Map();
  let calls = 0, errors = 0;
  if (state.prev) {
    const dt = Math.max((now - state.prev.time) / 1000, 0.001);
    for (const [k, s] of cur) {
      const before = state.prev.skills.get(k);
      const dc = s.calls - (before ? before.calls : 0);
      const de = sumErrors(s) - (before ? sumErrors(before) : 0);
      rates.set(k, { calls: Math.max(dc, 0) / dt, errors: Math.max(de, 0) / dt });
      calls += Math.max(dc, 0) / dt; errors += Math.max(de, 0) / dt;
    }
    setText("sum-rate", rate(calls));
    setText("sum-errors", rate(errors));
  }
  state.prev = { time: now, skills: cur };
  state.rates = rates;
  state.totals = cur;
  state.pools = new Map(st.pool.plugins.map((x) => [x.plugin, x]));
  renderFailures(st.recent_failures.failures);
}

const MAX_PROBLEMS = 6; // listed in the banner; the table has them all

function renderProblems(list) {
  $("problems").hidden = list.length === 0;
  const more = list.length > MAX_PROBLEMS ? [el("li", { class: "muted" }, `and ${list.length - MAX_PROBLEMS} more: Show → needing attention, below`)] : [];
  $("problem-list").replaceChildren(...list.slice(0, MAX_PROBLEMS).map((p) => {
    const lines = (p.message || "").split("\n");
    const state = p.state === "loaded" || p.state === "reloading" ? "revision refused" : stateLabel[p.state] || p.state;
    return el("li", { "data-plugin": p.plugin },
      el("span", { class: "state state-" + (p.state === "loaded" ? "reloading" : p.state) }, state), " ",
      el("strong", {}, p.plugin), " ", el("span", { class: "problem-text", title: p.message }, lines[0]),
      lines.length > 1 ? el("span", { class: "muted" }, ` (and ${lines.length - 1} more: see the table)`) : "");
  }), ...more);
}

// settingsText shows an operator's plugins.<name> settings: config keys and
// each secret set or unset (the host never sends values).
function settingsText(st) {
  const secrets = Object.entries(st.secrets || {}).sort().map(([k, v]) => `${k} ${v}`);
  return [st.config.length ? `config ${st.config.join(", ")}` : "", secrets.length ? `secrets ${secrets.join(", ")}` : ""]
    .filter(Boolean).join("; ");
}

function sumErrors(s) { return Object.values(s.errors || {}).reduce((a, b) => a + b, 0); }

function redrawAgents() { if (state.plugins) renderAgents(state.plugins, state); }

function redrawCharts() {
  if (!state.history || !state.plugins) return;
  const rules = new Map();
  for (const p of state.plugins.plugins) for (const s of p.skills) if (s.rate_limits) rules.set(p.name + "/" + s.id, s.rate_limits);
  renderCharts(state.history, state.uptime, rules);
}

function renderFailures(list) {
  $("failures").tBodies[0].replaceChildren(...list.map((f) => el("tr", { "data-reason": f.reason },
    el("td", { title: f.time }, new Date(f.time).toLocaleTimeString([], { hour12: false })),
    el("td", { class: "clip", title: f.method || "" }, f.method || (f.skill ? "(plan step)" : "–")), // no method: a plan step, or a body with none
    el("td", { class: "clip" }, f.skill ? `${f.plugin}/${f.skill}` : ""),
    el("td", { class: "num" }, String(f.code)),
    el("td", { class: "reason clip", title: f.reason }, f.reason),
    el("td", { class: "message" }, f.message),
    el("td", { class: "muted clip request", title: f.request_id || "" }, f.request_id || ""))));
}

async function renderCard() {
  const resp = await fetch("/.well-known/agent-card.json");
  if (!resp.ok) return;
  const card = await resp.json();
  setText("card-summary", `${card.name} — ${(card.skills || []).length} skills, ${card.version || ""}`);
  setText("card", JSON.stringify(card, null, 2));
}

// followEvents reads /events (Server-Sent Events over fetch, so the key can
// travel as a header) and keeps each plan's progress.
async function followEvents() {
  if (state.eventsOpen) return;
  state.eventsOpen = true;
  try {
    const resp = await fetch("/events", { headers: headers() });
    if (!resp.ok) { setText("plans-state", "event stream unavailable: HTTP " + resp.status); return; }
    setText("plans-state", "Following the event stream (plans started since this page opened).");
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const frame = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
        if (data) onEvent(JSON.parse(data));
      }
    }
  } catch (e) {
    setText("plans-state", "event stream interrupted: " + e.message);
  } finally {
    state.eventsOpen = false;
  }
}

function onEvent(ev) {
  if (!ev.plan_id) return;
  const key = ev.session_id + "/" + ev.plan_id;
  const p = state.plans.get(key) || { plan: ev.plan_id, session: ev.session_id, status: "running", done: 0, total: 0, last: "" };
  const d = ev.data || {};
  if (ev.type === "plan.started") { p.total = d.total_steps || 0; p.status = "running"; }
  if (ev.type === "plan.step.completed") p.done++;
  if (["plan.completed", "plan.failed", "plan.cancelled"].includes(ev.type)) {
    p.status = d.status || ev.type.slice(5);
    p.done = d.completed_steps ?? p.done; p.total = d.total_steps ?? p.total;
  }
  p.last = ev.type + (d.step_id ? " " + d.step_id : "") + (d.reason ? " (" + d.reason + ")" : "");
  state.plans.set(key, p);
  $("plans").tBodies[0].replaceChildren(...[...state.plans.values()].map((q) => el("tr", { "data-plan": q.plan, "data-status": q.status },
    el("td", {}, q.plan), el("td", {}, q.session), el("td", {}, q.status), el("td", {}, `${q.done} / ${q.total}`), el("td", {}, q.last))));
}

async function poll() {
  try {
    const withHistory = state.polls++ % HISTORY_EVERY === 0 || !state.history;
    const [st, plugins, history] = await Promise.all([getJSON("/admin/status"), getJSON("/admin/plugins"),
      withHistory ? getJSON("/admin/history") : Promise.resolve(null)]);
    renderStatus(st);
    state.plugins = plugins;
    if (history) state.history = history;
    redrawAgents();
    redrawCharts();
    $("key-form").hidden = true;
    $("forget-key").hidden = !sessionStorage.getItem(KEY_ITEM);
    followEvents();
  } catch (e) {
    if (e instanceof AuthNeeded) askKey(e.message);
    else setHealth("unreachable", "unhealthy", e.message);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("key-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(KEY_ITEM, $("key").value.trim());
    $("key").value = "";
    poll();
  });
  $("forget-key").addEventListener("click", () => { sessionStorage.removeItem(KEY_ITEM); location.reload(); });
  bindTable(redrawAgents);
  poll();
  renderCard();
  setInterval(poll, POLL_MS);
  setInterval(renderCard, 15000);
});
