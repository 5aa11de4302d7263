// The dashboard's script, served as /dashboard/app.js: plain browser JavaScript (no build
// step), hash-routed pages over the public API with the admin key the user gives, charts
// with uPlot. Kept free of backticks and "${" so it can live in this string.
export const APP_JS = String.raw`
"use strict";
const KEY = "edgemq-dashboard-token";
const state = { token: sessionStorage.getItem(KEY) || "", history: {}, lag: {}, timer: 0, charts: [] };
const fromHash = /[#&]token=([^&]+)/.exec(location.hash);
if (fromHash) {
  state.token = decodeURIComponent(fromHash[1]);
  sessionStorage.setItem(KEY, state.token);
  history.replaceState(null, "", location.pathname + "#/overview");
}

function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c !== undefined && c !== null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

async function api(path, init) {
  const headers = Object.assign({}, (init && init.headers) || {});
  if (state.token) headers.authorization = "Bearer " + state.token;
  const res = await fetch(path, Object.assign({}, init || {}, { headers }));
  const text = await res.text();
  if (!res.ok) {
    let detail = res.status + " " + res.statusText;
    try { const p = JSON.parse(text); detail = p.detail || p.title || detail; } catch (_) { /* text */ }
    const err = new Error(detail);
    err.status = res.status;
    throw err;
  }
  return text ? JSON.parse(text) : {};
}

function table(columns, rows, rowClass) {
  if (rows.length === 0) return el("p", { class: "empty" }, "None yet.");
  return el("table", {},
    el("thead", {}, el("tr", {}, columns.map((c) => el("th", {}, c[0])))),
    el("tbody", {}, rows.map((r) =>
      el("tr", { class: rowClass ? rowClass(r) : undefined },
        columns.map((c) => {
          const v = c[1](r);
          const cls = typeof v === "number" ? "num" : typeof v === "string" && v.length > 48 ? "wrap" : undefined;
          return el("td", { class: cls }, v instanceof Node ? v : fmt(v));
        })))));
}

function fmt(v) {
  if (v === undefined || v === null) return "-";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "number") return Number.isInteger(v) ? v.toLocaleString("en") : v.toFixed(2);
  return String(v);
}
const time = (ms) => (ms ? new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "-");
const bytes = (n) => (n > 1 << 30 ? (n / (1 << 30)).toFixed(1) + " GiB" : n > 1 << 20 ? (n / (1 << 20)).toFixed(1) + " MiB" : n > 1024 ? (n / 1024).toFixed(1) + " KiB" : n + " B");
const card = (label, value, id) => el("div", { class: "card" }, el("div", { class: "label" }, label), el("div", { class: "value", id: id }, value));

/** Sums of the samples of each family in Prometheus text. */
async function metrics() {
  const res = await fetch("/metrics");
  const sums = {};
  for (const line of (await res.text()).split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m) sums[m[1]] = (sums[m[1]] || 0) + Number(m[3]);
  }
  return sums;
}

function chart(host, title, series, data) {
  const width = Math.max(320, Math.min(1100, document.body.clientWidth - 64));
  const opts = {
    title: title, width: width, height: 220,
    series: [{}].concat(series.map((s, i) => ({ label: s, stroke: ["#2563eb", "#16a34a", "#dc2626", "#9333ea"][i % 4], width: 2 }))),
    axes: [{}, { size: 60 }],
    // 0 at the bottom of the values.
    scales: { y: { range: (u, min, max) => [0, Math.max(1, max * 1.2)] } },
  };
  const c = new uPlot(opts, data, host);
  state.charts.push(c);
  return c;
}

function remember(name, values) {
  const h = state.history[name] || (state.history[name] = []);
  h.push([Date.now() / 1000].concat(values));
  if (h.length > 300) h.shift();
  // A minute of axis before the first sample, so one point does not span years.
  const rows = [[h[0][0] - 60].concat(values.map(() => null))].concat(h);
  return rows[0].map((_, i) => rows.map((row) => row[i]));
}

const pages = {
  async overview(main) {
    const [m, topics, groups] = await Promise.all([metrics(), api("/v1/topics"), api("/v1/groups")]);
    const prev = state.lastMetrics;
    state.lastMetrics = { at: Date.now(), m: m };
    const dt = prev ? (Date.now() - prev.at) / 1000 : 0;
    const rate = (k) => (prev && dt > 0 ? Math.max(0, ((m[k] || 0) - (prev.m[k] || 0)) / dt) : 0);
    const produced = rate("mq_messages_produced_total"), consumed = rate("mq_messages_consumed_total");
    main.append(
      el("div", { class: "cards" },
        card("Topics", fmt(topics.topics.length), "ov-topics"),
        card("Groups", fmt(groups.groups.length), "ov-groups"),
        card("Produced", fmt(m.mq_messages_produced_total || 0), "ov-produced"),
        card("Consumed", fmt(m.mq_messages_consumed_total || 0), "ov-consumed"),
        card("Produce msg/s", fmt(produced), "ov-produce-rate"),
        card("Consume msg/s", fmt(consumed), "ov-consume-rate"),
        card("Total lag", fmt(m.mq_consumer_lag_messages || 0), "ov-lag"),
        card("Dead letters", fmt(m.mq_dlq_messages || 0), "ov-dlq"),
        card("Store", bytes(m.mq_store_bytes || 0), "ov-store"),
        card("Disk used", ((m.mq_disk_used_ratio || 0) * 100).toFixed(1) + " %", "ov-disk")),
      el("div", { id: "rates", class: "chart" }),
      el("div", { id: "lagchart", class: "chart" }));
    chart(main.querySelector("#rates"), "Messages per second", ["produce", "consume"], remember("rates", [produced, consumed]));
    chart(main.querySelector("#lagchart"), "Total lag (messages)", ["lag"], remember("lag", [m.mq_consumer_lag_messages || 0]));
  },

  async topics(main) {
    const { topics } = await api("/v1/topics");
    const stats = await Promise.all(topics.map((t) => api("/v1/topics/" + encodeURIComponent(t.name) + "/stats")));
    main.append(el("h2", {}, "Topics"), table([
      ["Topic", (s) => s.topic],
      ["Queues", (s) => s.queues.length],
      ["Messages", (s) => s.messages],
      ["Written", (s) => s.messagesWritten],
      ["Bytes since start", (s) => bytes(s.bytesProducedSinceStart)],
      ["msg/s", (s) => s.produceRatePerSec],
      ["Newest", (s) => time(Math.max.apply(null, s.queues.map((q) => q.lastStoreTimestamp)))],
    ], stats));
  },

  async groups(main) {
    const { groups } = await api("/v1/groups");
    const progress = await Promise.all(groups.map((g) => api("/v1/groups/" + encodeURIComponent(g.group) + "/progress")));
    main.append(el("h2", {}, "Consumer groups"), table([
      ["Group", (p) => p.group.group],
      ["Model", (p) => p.group.messageModel],
      ["Topics", (p) => p.topics.map((t) => t.topic).join(", ") || "-"],
      ["Lag", (p) => p.totalLag],
      ["DLQ", (p) => p.dlqMessages],
    ], progress));
    for (const p of progress) {
      const box = el("section", { class: "group" }, el("h3", {}, p.group.group + " — lag per queue"));
      box.append(table([
        ["Topic", (r) => r.topic], ["Queue", (r) => r.queueId], ["Min", (r) => r.minOffset],
        ["Max", (r) => r.maxOffset], ["Offset", (r) => (r.offset < 0 ? "-" : r.offset)], ["Lag", (r) => r.lag],
      ], p.topics.flatMap((t) => t.queues.map((q) => Object.assign({ topic: t.topic }, q)))));
      const host = el("div", { class: "chart" });
      box.append(host);
      main.append(box);
      chart(host, "Lag over time", ["lag"], remember("group:" + p.group.group, [p.totalLag]));
    }
  },

  async dlq(main) {
    const { groups } = await api("/v1/groups");
    main.append(el("h2", {}, "Dead-letter queues"));
    for (const g of groups) {
      const name = g.group, path = "/v1/groups/" + encodeURIComponent(name) + "/dlq";
      const letters = (await api(path + "?max=50")).messages;
      const act = async (button, init, p) => {
        button.disabled = true;
        try { flash((await api(p, init)).redriven !== undefined ? "Redrove letters of " + name : "Purged " + name); } catch (e) { flash(e.message, true); }
        render();
      };
      const redrive = el("button", { class: "redrive", "data-group": name, disabled: letters.length === 0 || undefined,
        onclick: (e) => act(e.target, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }, path + "/redrive") }, "Redrive all");
      const purge = el("button", { class: "danger", disabled: letters.length === 0 || undefined,
        onclick: (e) => confirm("Purge every dead letter of " + name + "?") && act(e.target, { method: "DELETE" }, path) }, "Purge");
      main.append(el("section", { class: "group", "data-dlq": name },
        el("h3", {}, name + " ", el("span", { class: "count" }, String(letters.length)), " ", redrive, " ", purge),
        table([["Message id", (m) => m.messageId], ["Topic", (m) => m.topic], ["Stored", (m) => time(m.storeTimestamp)],
          ["Reconsumed", (m) => m.reconsumeTimes], ["Body", (m) => (m.bodyEncoding === "utf8" ? m.body.slice(0, 80) : "(binary)")]], letters)));
    }
    if (groups.length === 0) main.append(el("p", { class: "empty" }, "No groups."));
  },

  async webhooks(main) {
    const { subscriptions } = await api("/v1/subscriptions");
    main.append(el("h2", {}, "Webhook subscriptions"), table([
      ["Group", (s) => s.group], ["Topic", (s) => s.topic], ["URL", (s) => s.url], ["Status", (s) => s.status],
      ["Delivered", (s) => s.stats.delivered], ["Failed attempts", (s) => s.stats.failedAttempts],
      ["Dead-lettered", (s) => s.stats.deadLettered], ["Lag", (s) => s.stats.lag],
    ], subscriptions, (s) => (s.status === "active" ? undefined : "warn")));
    for (const s of subscriptions) {
      const d = await api("/v1/subscriptions/" + encodeURIComponent(s.group) + "/deliveries?limit=50");
      main.append(el("h3", {}, s.group + " — recent deliveries"), table([
        ["At", (a) => time(a.at)], ["Message id", (a) => a.messageId], ["Attempt", (a) => a.attempt],
        ["HTTP", (a) => a.status], ["Outcome", (a) => a.outcome], ["ms", (a) => a.latencyMs], ["Error", (a) => a.error],
      ], d.deliveries || [], (a) => (a.outcome === "delivered" ? undefined : "fail")));
    }
  },

  async scheduled(main) {
    const { schedules } = await api("/v1/schedules");
    const toggle = (s) => el("button", { onclick: async () => {
      try { await api("/v1/schedules/" + encodeURIComponent(s.id) + (s.paused ? "/resume" : "/pause"), { method: "POST" }); } catch (e) { flash(e.message, true); }
      render();
    } }, s.paused ? "Resume" : "Pause");
    main.append(el("h2", {}, "Cron schedules"), table([
      ["Id", (s) => s.id], ["Topic", (s) => s.topic], ["Cron", (s) => s.cron], ["Time zone", (s) => s.timeZone],
      ["Paused", (s) => s.paused], ["Last tick", (s) => time(s.lastTickAt)], ["Next tick", (s) => time(s.nextTickAt)], ["", toggle],
    ], schedules));
    const topic = el("input", { placeholder: "topic", id: "cancel-topic" });
    const id = el("input", { placeholder: "message id", id: "cancel-id", size: 36 });
    main.append(el("h2", {}, "Scheduled messages"),
      el("form", { class: "inline", onsubmit: async (e) => {
        e.preventDefault();
        try {
          const r = await api("/v1/topics/" + encodeURIComponent(topic.value) + "/scheduled/" + encodeURIComponent(id.value), { method: "DELETE" });
          flash(r.messageId + " " + r.status);
        } catch (err) { flash(err.message, true); }
      } }, "Cancel a delayed or timed message: ", topic, " ", id, " ", el("button", {}, "Cancel")));
  },

  async cluster(main) {
    const [view, health] = await Promise.all([api("/v1/cluster"), api("/healthz")]);
    main.append(el("h2", {}, "Cluster (" + view.mode + ")"),
      el("p", {}, health.brokerName + " · " + health.status + " · " + health.runtime + " · " + health.flushDiskType),
      table([["Group", (n) => n.brokerGroup], ["Id", (n) => n.brokerId], ["Role", (n) => n.role], ["Epoch", (n) => n.epoch],
        ["Max offset", (n) => n.maxOffset], ["In sync", (n) => n.inSync], ["Lag bytes", (n) => n.lagBytes], ["Address", (n) => n.address]], view.nodes));
  },
};

function flash(text, bad) {
  const f = document.getElementById("flash");
  f.textContent = text;
  f.className = bad ? "bad" : "ok";
}

function login(main, message) {
  const input = el("input", { type: "password", id: "token", placeholder: "admin API key", size: 40 });
  main.append(el("form", { class: "login", onsubmit: (e) => {
    e.preventDefault();
    state.token = input.value;
    sessionStorage.setItem(KEY, state.token);
    render();
  } }, el("p", {}, message), input, " ", el("button", {}, "Open")));
}

async function render() {
  const page = (location.hash.replace(/^#\/?/, "") || "overview").split("?")[0];
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.getAttribute("href") === "#/" + page);
  const main = el("main", { "data-page": page });
  const old = state.charts.splice(0);
  try {
    await (pages[page] || pages.overview)(main);
  } catch (e) {
    main.textContent = "";
    if (e.status === 401 || e.status === 403) login(main, "This broker needs an admin API key (" + e.message + ").");
    else main.append(el("p", { class: "bad" }, "Cannot load: " + e.message));
  }
  document.querySelector("main").replaceWith(main);
  for (const c of old) c.destroy();
  document.body.dataset.loaded = String(Date.now());
}

window.addEventListener("hashchange", () => {
  flash("");
  render();
});
document.getElementById("logout").addEventListener("click", () => {
  sessionStorage.removeItem(KEY);
  state.token = "";
  render();
});
render();
state.timer = setInterval(() => { if (!document.querySelector("form input:focus")) render(); }, 3000);
`;
