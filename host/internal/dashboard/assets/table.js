// skillhost dashboard: the agents and skills table, sortable by a column
// and filterable by state and name. Every value is inserted as text.
"use strict";

const view = { sort: "name", dir: 1, filter: "all", text: "" };

// stateRank orders plugins by state: those needing an operator first.
const stateRank = { failed: 0, not_ready: 1, loading: 2, reloading: 3, loaded: 4 };
const stateLabel = { failed: "failed", not_ready: "not ready", loading: "loading", reloading: "reloading", loaded: "loaded" };

// skillRow gathers what the table shows of one skill.
function skillRow(p, s, totals, rates) {
  const key = p.name + "/" + s.id;
  const t = totals.get(key) || { calls: 0, errors: {}, seconds: 0 };
  const errors = Object.values(t.errors || {}).reduce((a, b) => a + b, 0);
  const r = rates.get(key);
  return { s, key, t, errors, rate: r ? r.calls : null, latency: t.calls ? 1000 * t.seconds / t.calls : null,
    limited: (t.errors || {}).rate_limited || 0 };
}

function sortValue(x, col) {
  switch (col) {
    case "state": return x.rank;
    case "calls": return x.calls;
    case "rate": return x.rate ?? -1;
    case "errors": return x.errors;
    case "latency": return x.latency ?? -1;
  }
  return null;
}

// compare sorts by the chosen column (numbers descending first), then by name.
function compare(a, b, nameA, nameB) {
  const va = sortValue(a, view.sort), vb = sortValue(b, view.sort);
  if (va !== null && va !== vb) return (view.sort === "state" ? va - vb : vb - va) * view.dir;
  return nameA.localeCompare(nameB) * (view.sort === "name" ? view.dir : 1);
}

function matchesText(p, rows) {
  if (!view.text) return rows;
  const q = view.text.toLowerCase();
  if (p.name.toLowerCase().includes(q)) return rows;
  return rows.filter((r) => r.s.id.toLowerCase().includes(q));
}

// keep applies the state filter: whole plugins by state, or their skills
// with errors or rate limits.
function keep(p, rows) {
  switch (view.filter) {
    case "problems": return p.state === "failed" || p.state === "not_ready" || p.error ? rows : null;
    case "loaded": case "not_ready": case "failed": return p.state === view.filter ? rows : null;
    case "loading": return p.state === "loading" || p.state === "reloading" ? rows : null;
    case "errors": rows = rows.filter((r) => r.errors > 0); return rows.length ? rows : null;
    case "limited": rows = rows.filter((r) => r.limited > 0 || (r.s.rate_limits || []).length); return rows.length ? rows : null;
  }
  return rows;
}

function limitsText(lim) {
  return lim ? `timeout ${lim.timeout} · memory ${lim.memory} · output ${lim.output} · concurrency ${lim.concurrency}` : "";
}

// renderAgents redraws the table from /admin/plugins and the latest
// status readings (st: totals, rates and pools by key).
function renderAgents(doc, st) {
  const groups = [];
  for (const p of doc.plugins) {
    let rows = p.skills.map((s) => skillRow(p, s, st.totals, st.rates));
    rows = matchesText(p, rows);
    if (view.text && !rows.length && !p.name.toLowerCase().includes(view.text.toLowerCase())) continue;
    rows = keep(p, rows);
    if (rows === null) continue;
    const sum = (f) => rows.reduce((a, r) => a + (f(r) || 0), 0);
    const lat = rows.map((r) => r.latency).filter((v) => v !== null);
    const rated = rows.filter((r) => r.rate !== null);
    groups.push({ p, rows, rank: stateRank[p.state] ?? 9, calls: sum((r) => r.t.calls), errors: sum((r) => r.errors),
      rate: rated.length ? sum((r) => r.rate) : null, latency: lat.length ? Math.max(...lat) : null });
  }
  groups.sort((a, b) => compare(a, b, a.p.name, b.p.name));
  const out = [];
  let skills = 0;
  for (const g of groups) {
    g.rows.sort((a, b) => compare({ ...a, rank: 0, calls: a.t.calls }, { ...b, rank: 0, calls: b.t.calls }, a.s.id, b.s.id));
    out.push(agentRow(g, st.pools.get(g.p.name)));
    if (g.p.error) {
      out.push(el("tr", { class: "problem-row", "data-plugin": g.p.name }, el("td", { colspan: "9" }, el("span", { class: "problem" }, g.p.error))));
    }
    for (const r of g.rows) out.push(skillTableRow(g.p, r));
    skills += g.rows.length;
  }
  if (!out.length) out.push(el("tr", { class: "empty" }, el("td", { colspan: "9", class: "muted" }, "No agent matches the filter.")));
  $("agents").tBodies[0].replaceChildren(...out);
  setText("agents-count", `${groups.length} of ${doc.plugins.length} agents, ${skills} skills`);
  for (const th of $("agents").tHead.rows[0].cells) {
    if (!th.dataset.sort) continue;
    const ascending = view.sort === "name" || view.sort === "state" ? view.dir > 0 : view.dir < 0;
    th.setAttribute("aria-sort", th.dataset.sort === view.sort ? (ascending ? "ascending" : "descending") : "none");
  }
}

function agentRow(g, pool) {
  const p = g.p;
  return el("tr", { class: "agent", "data-plugin": p.name, "data-state": p.state },
    el("td", {}, el("span", { class: "name" }, p.name), el("span", { class: "muted" }, ` ${p.version || ""} · ${p.source}`),
      el("span", { class: "muted signer" }, p.signer ? `signed by ${p.signer}` : "unsigned"),
      ...(p.oci ? [el("span", { class: "muted signer" }, `from ${p.oci.ref}`)] : []),
      ...(p.settings ? [el("span", { class: "muted signer settings" }, settingsText(p.settings))] : [])),
    el("td", {}, el("span", { class: "state state-" + p.state }, stateLabel[p.state] || p.state)),
    el("td", { class: "limits" }, limitsText(p.limits)),
    el("td", { class: "pool num" }, pool ? `${pool.instances.idle} / ${pool.instances.busy} / ${pool.instances.discarded}` : ""),
    el("td", { class: "memory num" }, pool ? `${bytes(pool.memory_peak_bytes)} / ${bytes(pool.memory_limit_bytes)}` : ""),
    el("td", { class: "num" }, g.p.skills.length ? String(g.calls) : ""),
    el("td", { class: "num" }, g.rate !== null ? rate(g.rate) : ""),
    el("td", {}, g.errors ? el("span", { class: "muted" }, `${g.errors} in all`) : ""),
    el("td", { class: "num" }));
}

function skillTableRow(p, r) {
  const errCell = el("td", { class: "errors" });
  for (const [reason, n] of Object.entries(r.t.errors || {}).sort()) {
    errCell.append(el("span", { class: "reason" + (reason === "rate_limited" ? " limited" : ""), "data-reason": reason }, `${reason} ${n}`));
  }
  const name = el("td", { title: r.s.description || "" }, r.s.id);
  for (const rule of r.s.rate_limits || []) {
    name.append(el("span", { class: "rule", title: `${rule.limit}: ${rule.skill}` }, `≤ ${rule.rate} per ${rule.per}`));
  }
  return el("tr", { class: "skill", "data-plugin": p.name, "data-skill": r.s.id },
    name, el("td", {}), el("td", {}), el("td", {}), el("td", {}),
    el("td", { class: "calls num" }, String(r.t.calls)),
    el("td", { class: "rate num" }, r.rate !== null ? rate(r.rate) : "–"),
    errCell,
    el("td", { class: "latency num" }, r.latency !== null ? fmtMS(r.latency) : "–"));
}

// bindTable wires the column headers and the filters; redraw repaints.
function bindTable(redraw) {
  for (const th of $("agents").tHead.rows[0].cells) {
    const col = th.dataset.sort;
    if (!col) continue;
    th.tabIndex = 0;
    const pick = () => {
      if (view.sort === col) view.dir = -view.dir;
      else { view.sort = col; view.dir = 1; }
      redraw();
    };
    th.addEventListener("click", pick);
    th.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pick(); } });
  }
  $("filter-state").addEventListener("change", (ev) => { view.filter = ev.target.value; redraw(); });
  $("filter-text").addEventListener("input", (ev) => { view.text = ev.target.value.trim(); redraw(); });
}
