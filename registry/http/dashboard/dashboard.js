// The ops dashboard: reads the registry's public REST APIs and its /events stream.
// Descriptions are untrusted input: every value reaches the page as text (the el() helper below makes text nodes;
// nothing is parsed as HTML), and links are only made from URLs this module builds or checks.

const ROOT = new URL("../", import.meta.url);
const PAGE_SIZE = 25;
const FEED_LIMIT = 200;
const REFRESH_DELAY_MS = 1000;
const RESUBSCRIBE_DELAY_MS = 5000;
const HEALTH_INTERVAL_MS = 5000;
const METRICS_INTERVAL_MS = 5000;
const RECENT_CHANGES = 50;
const QUALITY_LIMIT = 100;

const $ = (id) => document.getElementById(id);

/** An element with text children (strings become text nodes) and plain properties. */
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null) continue;
    if (name === "dataset") Object.assign(node.dataset, value);
    else node[name] = value;
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function url(path, params = {}) {
  const target = new URL(path, ROOT);
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") target.searchParams.set(name, value);
  }
  return target;
}

// A registry with REGISTRY_AUTH=all needs credentials to read: the dashboard asks for an API key or access token
// on the first 401 and keeps it in this variable only (never in localStorage or a cookie): closing the page
// forgets it. The event stream gets it as ?access_token=, since EventSource cannot send an Authorization header.
let token = "";

function askForToken() {
  const given = window.prompt("This registry needs an API key or access token to read. It is kept in this page only.");
  token = (given || "").trim();
  return Boolean(token);
}

async function authorizedFetch(target, headers) {
  const sent = token;
  const request = () =>
    fetch(target, { cache: "no-store", headers: token ? { ...headers, Authorization: `Bearer ${token}` } : headers });
  const response = await request();
  // Ask once per refused token; requests refused meanwhile retry with the token another one was given.
  if (response.status === 401 && (token !== sent || askForToken())) return request();
  return response;
}

/** Every request of the page goes through here, with the token when one was given. */
function call(path, params, headers = {}) {
  return authorizedFetch(url(path, params), headers);
}

/** GET a JSON resource; a problem+json answer becomes an Error carrying its detail. */
async function getJSON(path, params) {
  const response = await call(path, params, { Accept: "application/json" });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const error = new Error((body && (body.detail || body.title)) || `${response.status} ${response.statusText}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

const thingPath = (id) => encodeURIComponent(id);

function formatTime(value) {
  if (!value) return "–";
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
}

function relative(value) {
  if (!value) return "never";
  const seconds = Math.round((new Date(value).getTime() - Date.now()) / 1000);
  const units = [["d", 86400], ["h", 3600], ["min", 60], ["s", 1]];
  const [unit, size] = units.find(([, size]) => Math.abs(seconds) >= size) || units[3];
  const amount = Math.round(Math.abs(seconds) / size);
  return seconds < 0 ? `${amount} ${unit} ago` : `in ${amount} ${unit}`;
}

function showError(node, error) {
  node.hidden = !error;
  node.textContent = error ? String(error.message || error) : "";
}

function safeHttpLink(href, text) {
  try {
    const parsed = new URL(href);
    if (parsed.protocol === "http:" || parsed.protocol === "https:") {
      return el("a", { href: parsed.href, rel: "noopener noreferrer", target: "_blank" }, text);
    }
  } catch {
    // not a URL: shown as text below
  }
  return text;
}

/** The full id with a button that copies it (the row's click opens details; the button's does not). */
function fullId(id) {
  const code = el("code", {}, id);
  const button = el("button", { type: "button", className: "copy", title: "Copy the id" }, "copy");
  button.addEventListener("click", async (event) => {
    event.stopPropagation();
    try {
      await navigator.clipboard.writeText(id);
    } catch {
      // no clipboard (an insecure origin): select the id for Ctrl+C instead
      getSelection().selectAllChildren(code);
    }
    button.dataset.copied = "";
    button.textContent = "copied";
    setTimeout(() => {
      delete button.dataset.copied;
      button.textContent = "copy";
    }, 1500);
  });
  return el("div", { className: "full-id" }, code, button);
}

/** Sort the loaded rows of a table by a column's data-* value; a second click reverses the order. */
function sortRows(th) {
  const table = th.closest("table");
  const column = th.dataset.column;
  const descending = th.getAttribute("aria-sort") === "ascending";
  for (const other of table.querySelectorAll("th")) other.removeAttribute("aria-sort");
  th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  const body = table.tBodies[0];
  const value = (row) => row.dataset[column] ?? "";
  const rows = [...body.rows].sort((a, b) => {
    const [x, y] = [value(a), value(b)];
    const numeric = x !== "" && y !== "" && !Number.isNaN(Number(x)) && !Number.isNaN(Number(y));
    const order = numeric ? Number(x) - Number(y) : x.localeCompare(y, undefined, { sensitivity: "base" });
    return descending ? -order : order;
  });
  body.append(...rows);
}

// -- health, traffic and leases (this replica's /readyz and /metrics)

async function checkHealth() {
  const card = $("health");
  let state = "unreachable";
  let checks = {};
  try {
    const response = await call("readyz", {}, { Accept: "application/json" });
    const body = await response.json().catch(() => ({}));
    state = response.ok ? "ready" : "unready";
    checks = body.checks || {};
  } catch {
    // the registry does not answer at all
  }
  card.dataset.state = state;
  $("health-state").textContent = { ready: "ready", unready: "not ready", unreachable: "unreachable" }[state];
  $("health-checks").replaceChildren(
    ...Object.entries(checks).map(([name, check]) =>
      el("li", { className: check.ok ? "ok" : "failing", dataset: { check: name } }, `${name}: ${check.detail}`)),
  );
}

/** Samples of the Prometheus text format: [{name, labels, value}]. */
function parseMetrics(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels = {};
    for (const [, name, value] of (match[2] || "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[name] = value;
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

function total(samples, name, keep = () => true) {
  return samples.filter((sample) => sample.name === name && keep(sample.labels)).reduce((sum, s) => sum + s.value, 0);
}

let previousMetrics = null;

async function pollMetrics() {
  let samples;
  try {
    const response = await call("metrics");
    if (!response.ok) return;
    samples = parseMetrics(await response.text());
  } catch {
    return;
  }
  const now = performance.now();
  const notStream = (labels) => !String(labels.path || "").startsWith("/events");
  const current = {
    at: now,
    requests: total(samples, "registry_http_requests_total"),
    errors: total(samples, "registry_http_requests_total", (labels) => Number(labels.status_code) >= 500),
    count: total(samples, "registry_http_request_duration_seconds_count", notStream),
    sum: total(samples, "registry_http_request_duration_seconds_sum", notStream),
    buckets: new Map(),
  };
  for (const sample of samples) {
    if (sample.name === "registry_http_request_duration_seconds_bucket" && notStream(sample.labels)) {
      const bound = Number(sample.labels.le);
      current.buckets.set(bound, (current.buckets.get(bound) || 0) + sample.value);
    }
  }
  setCount("stat-expiring", total(samples, "registry_leases_expiring_soon"));
  $("stat-expired").textContent = `${total(samples, "registry_descriptions_expired")} expired, awaiting purge`;
  if (previousMetrics) {
    const seconds = (now - previousMetrics.at) / 1000;
    const requests = current.requests - previousMetrics.requests;
    const errors = current.errors - previousMetrics.errors;
    $("stat-rate").textContent = `${(requests / seconds).toFixed(1)}/s`;
    $("stat-errors").textContent =
      `errors (5xx): ${(errors / seconds).toFixed(2)}/s, ${requests ? ((100 * errors) / requests).toFixed(1) : "0.0"} %`;
    const count = current.count - previousMetrics.count;
    if (count > 0) {
      const mean = (1000 * (current.sum - previousMetrics.sum)) / count;
      const bounds = [...current.buckets.keys()].sort((a, b) => a - b);
      const p95 = bounds.find((bound) => current.buckets.get(bound) - (previousMetrics.buckets.get(bound) || 0) >= 0.95 * count);
      const p95Text = p95 === undefined || p95 === Infinity ? "> largest bucket" : `≤ ${(p95 * 1000).toFixed(0)} ms`;
      $("stat-latency").textContent = `latency: mean ${mean.toFixed(1)} ms, p95 ${p95Text}`;
    } else {
      $("stat-latency").textContent = "latency: no requests in the last interval";
    }
  }
  previousMetrics = current;
}

// -- counts and facets

const filters = { q: "", kind: "", vendor: "", capability: "" };

function setCount(id, value) {
  $(id).textContent = value === undefined || value === null ? "–" : String(value);
}

function renderFacet(listId, values, filterName, datalistId) {
  const list = $(listId);
  list.replaceChildren(
    ...values.map(({ value, count }) => {
      const button = el("button", { type: "button", className: "facet", title: `Filter by ${filterName} ${value}` },
        el("span", { className: "facet-value" }, value), el("span", { className: "count" }, count));
      if (filters[filterName] === value) button.classList.add("active");
      button.addEventListener("click", () => {
        filters[filterName] = filters[filterName] === value ? "" : value;
        $(filterName).value = filters[filterName];
        loadResults();
      });
      return el("li", {}, button);
    }),
  );
  if (!values.length) list.append(el("li", { className: "muted" }, "none"));
  if (datalistId) $(datalistId).replaceChildren(...values.map(({ value }) => el("option", { value })));
}

async function loadCounts() {
  const [facets, collection, stats] = await Promise.allSettled([
    getJSON("api/v1/facets"),
    getJSON("things", { limit: 1, format: "collection" }),
    getJSON("search/stats"),
  ]);
  if (collection.status === "fulfilled") setCount("stat-total", collection.value.total);
  if (facets.status === "fulfilled") {
    const byKind = Object.fromEntries(facets.value.kind.map(({ value, count }) => [value, count]));
    for (const kind of ["agent", "tool", "thing"]) setCount(`stat-${kind}`, byKind[kind] || 0);
    renderFacet("facet-kind", facets.value.kind, "kind");
    renderFacet("facet-vendor", facets.value.vendor, "vendor", "vendor-values");
    renderFacet("facet-capability", facets.value.capability, "capability", "capability-values");
  }
  if (stats.status === "fulfilled") {
    const value = stats.value;
    // The index's own figures count every tenant's descriptions: only a reader who sees everything gets them.
    const counted = typeof value.indexedDescriptions === "number";
    $("stat-index").textContent = !value.indexReady ? "building" : counted ? `${value.indexedDescriptions} descriptions` : "ready";
    // Writes the index holds back during a burst (it applies them when the burst ends or a query needs them).
    const pending = value.pendingDescriptions ? `, ${value.pendingDescriptions} pending after a burst of writes` : "";
    $("stat-index-detail").textContent = value.indexReady && counted ? `${value.indexedDescriptions} descriptions indexed${pending}` : "";
    setCount("stat-unknown", value.descriptionsWithUnknownContexts);
    $("stat-unknown-detail").textContent = Object.keys(value.unknownContexts || {}).join(", ");
  }
}

// -- the table

let nextCursor = null;
let matches = 0;
let loading = 0;
/** The server-side order of the table: title (default), modified or expires. */
let sort = "";

function capabilityChips(capabilities) {
  const shown = capabilities.slice(0, 3).map((capability) =>
    el("span", { className: "chip", title: capability.id || capability.name },
      capability.name, capability.version ? ` ${capability.version}` : ""),
  );
  if (capabilities.length > 3) shown.push(el("span", { className: "muted" }, ` +${capabilities.length - 3}`));
  return shown;
}

/** Titles of the descriptions seen in the table or in details, to name them in the activity feed. */
const titles = new Map();

function resultRow(item) {
  if (item.title) titles.set(item.id, item.title);
  const dataset = {
    id: item.id,
    kind: item.kind,
    vendor: (item.vendor && item.vendor.name) || "",
    version: item.version || "",
    capabilities: String((item.capabilities || []).length),
  };
  const row = el("tr", { tabIndex: 0, dataset },
    el("td", { className: "title" }, item.title || item.id,
      item.description ? el("div", { className: "sub" }, item.description) : null, fullId(item.id)),
    el("td", {}, el("span", { className: `kind kind-${item.kind}` }, item.kind)),
    el("td", {}, item.vendor && item.vendor.name ? item.vendor.name : "–"),
    el("td", {}, item.version || "–"),
    el("td", {}, capabilityChips(item.capabilities || [])),
    el("td", { title: formatTime(item.modified) }, relative(item.modified)),
    el("td", { title: item.expires ? formatTime(item.expires) : "no expiry" }, item.expires ? relative(item.expires) : "–"),
  );
  row.addEventListener("click", () => openDetail(item.id));
  row.addEventListener("keydown", (event) => {
    if (event.key === "Enter") openDetail(item.id);
  });
  return row;
}

async function loadResults(append = false) {
  const ticket = ++loading;
  // The first page asks for facets too: their kind counts add up to the number of matches.
  const params = {
    ...filters, sort: sort || null, limit: PAGE_SIZE, cursor: append ? nextCursor : null, facets: append ? null : "true",
  };
  try {
    const page = await getJSON("api/v1/search", params);
    if (ticket !== loading) return; // a newer search has started
    showError($("table-error"), null);
    const rows = page.items.map(resultRow);
    if (append) $("rows").append(...rows);
    else $("rows").replaceChildren(...rows);
    nextCursor = page.next_cursor;
    if (page.facets) matches = page.facets.kind.reduce((sum, { count }) => sum + count, 0);
    $("matches").textContent = sort === "expires"
      ? `${$("rows").children.length} with a lease shown, soonest to expire first`
      : `${$("rows").children.length} of ${matches} shown`;
    $("more").hidden = !nextCursor;
    $("empty").hidden = $("rows").children.length > 0;
    $("table-notice").hidden = true;
    staleChanges = 0;
  } catch (error) {
    if (ticket === loading) showError($("table-error"), error);
  }
  for (const name of ["kind", "vendor", "capability"]) {
    for (const button of document.querySelectorAll(`#facet-${name} .facet`)) {
      button.classList.toggle("active", button.querySelector(".facet-value").textContent === filters[name]);
    }
  }
}

// -- details

function fact(term, ...value) {
  return [el("dt", {}, term), el("dd", {}, ...value)];
}

async function openDetail(id) {
  const dialog = $("detail");
  $("detail-title").textContent = id;
  for (const list of ["detail-facts", "detail-capabilities", "detail-lint", "detail-versions"]) $(list).replaceChildren();
  $("detail-description").textContent = "";
  $("detail-raw").textContent = "loading…";
  $("detail-raw-link").href = url(`things/${thingPath(id)}`).href;
  showError($("detail-error"), null);
  if (!dialog.open) dialog.showModal();

  const [summary, versions, raw] = await Promise.allSettled([
    getJSON(`api/v1/things/${thingPath(id)}/summary`),
    getJSON(`api/v1/things/${thingPath(id)}/versions`),
    getJSON(`things/${thingPath(id)}`),
  ]);
  if (summary.status === "rejected") {
    showError($("detail-error"), summary.reason);
  } else {
    renderSummary(summary.value);
  }
  if (versions.status === "fulfilled") {
    renderVersions(versions.value.items);
  } else {
    $("detail-versions").append(el("tr", {}, el("td", { colSpan: 5, className: "muted" },
      versions.reason.status === 404 ? "No versions kept (the description declares no version)" : versions.reason.message)));
  }
  $("detail-raw").textContent = raw.status === "fulfilled" ? JSON.stringify(raw.value, null, 2) : raw.reason.message;
}

function renderSummary(summary) {
  $("detail-title").textContent = summary.title || summary.id;
  if (summary.title) titles.set(summary.id, summary.title);
  $("detail-description").textContent = summary.description || "";
  const vendor = summary.vendor || {};
  $("detail-facts").append(
    ...fact("Id", el("code", {}, summary.id)),
    ...fact("Kind", summary.kind),
    ...fact("Vendor", vendor.name || "–", vendor.url ? [" (", safeHttpLink(vendor.url, vendor.url), ")"] : null),
    ...fact("Version", summary.version || "–"),
    ...fact("Types", (summary.types || []).join(", ") || "–"),
    ...fact("Languages", (summary.languages || []).join(", ") || "–"),
    ...fact("Changed", formatTime(summary.modified)),
    ...fact("Expires", summary.expires ? `${formatTime(summary.expires)} (${relative(summary.expires)})` : "no expiry"),
  );
  const capabilities = summary.capabilities || [];
  $("detail-capabilities").replaceChildren(
    ...capabilities.map((capability) =>
      el("li", {},
        el("strong", {}, capability.name),
        capability.version ? ` ${capability.version}` : "",
        el("span", { className: "muted" }, ` (${capability.source}${capability.id ? `, ${capability.id}` : ""})`),
        capability.description ? el("div", { className: "sub" }, capability.description) : null),
    ),
  );
  if (!capabilities.length) $("detail-capabilities").append(el("li", { className: "muted" }, "none"));
  const lint = summary.lint || [];
  $("detail-lint").replaceChildren(
    ...lint.map((warning) => el("li", {}, el("code", {}, warning.code), " ", warning.message,
      el("span", { className: "muted" }, ` (${warning.field})`))),
  );
  if (!lint.length) $("detail-lint").append(el("li", { className: "muted" }, "none"));
}

function renderVersions(items) {
  $("detail-versions").replaceChildren(
    ...items.map((item) =>
      el("tr", { className: item.current ? "current" : "" },
        el("td", {}, item.version, item.current ? [" ", el("span", { className: "chip" }, "current")] : null),
        el("td", {}, formatTime(item.registered)),
        el("td", {}, item.previous_version || "–"),
        el("td", {}, item.verdict ? el("span", { className: `verdict verdict-${item.verdict}` }, item.verdict) : "–"),
        el("td", {}, item.honest === null || item.honest === undefined ? "–" : item.honest ? "yes" : "no"),
      ),
    ),
  );
}

// -- quality

async function loadQuality() {
  try {
    const report = await getJSON("api/v1/quality", { limit: QUALITY_LIMIT });
    showError($("quality-error"), null);
    $("quality-lint-count").textContent = String(report.lint.length);
    $("quality-bumps-count").textContent = String(report.bumps.length);
    $("quality-lint").tBodies[0].replaceChildren(...report.lint.map((item) => {
      const codes = [...new Set(item.warnings.map((warning) => warning.code))];
      const row = el("tr", { dataset: { title: item.title || item.id, kind: item.kind, warnings: String(item.warnings.length), codes: codes.join(" ") } },
        el("td", {}, el("button", { type: "button", className: "link", onclick: () => openDetail(item.id) }, item.title || item.id), fullId(item.id)),
        el("td", {}, el("span", { className: `kind kind-${item.kind}` }, item.kind)),
        el("td", {}, item.warnings.length),
        el("td", {}, codes.map((code) => el("span", { className: "chip" }, code))));
      return row;
    }));
    $("quality-bumps").tBodies[0].replaceChildren(...report.bumps.map((bump) => {
      const honest = bump.honest === null || bump.honest === undefined ? "" : bump.honest ? "yes" : "no";
      return el("tr", { dataset: { title: bump.title || bump.id, version: bump.version, previous: bump.previous_version || "", verdict: bump.verdict || "", honest, registered: bump.registered } },
        el("td", {}, el("button", { type: "button", className: "link", onclick: () => openDetail(bump.id) }, bump.title || bump.id), fullId(bump.id)),
        el("td", {}, bump.version),
        el("td", {}, bump.previous_version || "–"),
        el("td", {}, bump.verdict ? el("span", { className: `verdict verdict-${bump.verdict}` }, bump.verdict) : "–"),
        el("td", {}, honest || "–"),
        el("td", { title: formatTime(bump.registered) }, relative(bump.registered)));
    }));
  } catch (error) {
    showError($("quality-error"), error);
  }
}

// -- the live activity feed

let staleChanges = 0;
let refreshTimer = null;

function showStale(message) {
  const notice = $("table-notice");
  notice.replaceChildren(`${message} `,
    el("button", { type: "button", className: "link", onclick: () => loadResults() }, "Refresh"));
  notice.hidden = false;
}

/** At most one reload of the counts per REFRESH_DELAY_MS, however fast changes arrive. */
function scheduleRefresh() {
  refreshTimer ??= setTimeout(() => {
    refreshTimer = null;
    loadCounts();
    loadQuality();
  }, REFRESH_DELAY_MS);
  staleChanges += 1;
  showStale(`${staleChanges} change(s) since the table was loaded.`);
}

/** Sequence number of the newest change shown: a new stream starts after it, so none is missed or repeated. */
let lastSeq = null;

function showEvent({ type, id, seq, at, actor, replayed }) {
  const verb = type.replace("thing_", "");
  const title = titles.get(id);
  const name = verb === "deleted" || !id
    ? el("span", { className: "name" }, title || id)
    : el("button", { type: "button", className: "link name", onclick: () => openDetail(id) }, title || id);
  const item = el("li", { className: `event event-${verb}${replayed ? " replayed" : ""}`, dataset: { seq, id } },
    el("span", { className: "verb" }, verb),
    el("time", { dateTime: at.toISOString(), title: at.toLocaleString() }, at.toLocaleTimeString()),
    name,
    title ? el("span", { className: "id" }, id) : null,
    actor ? el("span", { className: "actor" }, `by ${actor}`) : null);
  const list = $("events");
  list.prepend(item);
  $("events-empty").hidden = true;
  while (list.children.length > FEED_LIMIT) list.lastElementChild.remove();
  if (seq && /^\d+$/.test(String(seq))) lastSeq = Math.max(lastSeq || 0, Number(seq));
}

function addEvent(type, event) {
  let data = {};
  try {
    data = JSON.parse(event.data);
  } catch {
    // a frame without JSON data: shown without an id
  }
  const id = typeof data.id === "string" ? data.id : "";
  // Live events carry no time of their own: this is when the page received it.
  // With authentication on, events name the principal that made the change (docs/security.md, "Audit").
  const actor = typeof data.actor === "string" ? data.actor : null;
  showEvent({ type, id, seq: event.lastEventId, at: new Date(), actor, replayed: false });
  scheduleRefresh();
}

/** The latest changes from the change log, shown before the live stream starts after the newest of them. */
async function loadRecentChanges() {
  try {
    const recent = await getJSON("api/v1/changes", { limit: RECENT_CHANGES });
    for (const change of [...recent.items].reverse()) {
      showEvent({ type: change.type, id: change.id, seq: String(change.seq), at: new Date(change.at), actor: change.actor, replayed: true });
    }
  } catch {
    // without the history the live stream still starts; the panel shows only new changes
  }
}

function setFeedStatus(state, text) {
  const status = $("feed-status");
  status.dataset.state = state;
  status.textContent = text;
}

function subscribe(afterFailure = false) {
  // EventSource reconnects by itself and sends Last-Event-ID, so the registry replays what was missed. Without
  // an event received yet there is no id to send, and a new EventSource starts without one: then the counts are
  // reloaded and the table is marked as possibly stale.
  // After the changes already shown (lastSeq), so a reconnection of this EventSource resumes there too.
  const source = new EventSource(url("events", { lastEventId: lastSeq, access_token: token }));
  let interrupted = afterFailure;
  let resumable = lastSeq !== null; // a reconnection resumes after the newest change shown
  source.addEventListener("open", () => {
    setFeedStatus("live", "live");
    if (interrupted && !resumable) {
      loadCounts();
      showStale("The live feed was interrupted; changes made meanwhile may be missing from it.");
    }
    interrupted = false;
  });
  source.addEventListener("error", () => {
    interrupted = true;
    checkHealth();
    if (source.readyState === EventSource.CLOSED) {
      // The server refused the stream (not a dropped connection): start afresh after a pause.
      setFeedStatus("down", "disconnected");
      setTimeout(() => subscribe(true), RESUBSCRIBE_DELAY_MS);
    } else {
      setFeedStatus("connecting", "reconnecting…");
    }
  });
  for (const type of ["thing_created", "thing_updated", "thing_deleted", "thing_transferred"]) {
    source.addEventListener(type, (event) => {
      resumable ||= Boolean(event.lastEventId);
      addEvent(type, event);
    });
  }
}

// -- wiring

function readForm() {
  for (const name of Object.keys(filters)) filters[name] = $(name).value.trim();
}

$("search").addEventListener("submit", (event) => {
  event.preventDefault();
  readForm();
  loadResults();
});
$("kind").addEventListener("change", () => {
  readForm();
  loadResults();
});
$("clear").addEventListener("click", () => {
  for (const name of Object.keys(filters)) $(name).value = "";
  readForm();
  loadResults();
});
$("more").addEventListener("click", () => loadResults(true));
for (const th of document.querySelectorAll("#results th[data-sort]")) {
  th.querySelector(".sort").addEventListener("click", () => orderTableBy(th.dataset.sort));
}
for (const th of document.querySelectorAll("th[data-column]")) {
  th.querySelector(".sort").addEventListener("click", () => sortRows(th));
}
$("show-expiring").addEventListener("click", () => orderTableBy("expires"));

/** A server-side order (title, modified, expires): reloads the table from its first page. */
function orderTableBy(name) {
  sort = name === "title" ? "" : name;
  for (const th of document.querySelectorAll("#results th")) {
    th.removeAttribute("aria-sort");
    if (th.dataset.sort === name) th.setAttribute("aria-sort", name === "modified" ? "descending" : "ascending");
  }
  loadResults();
}
$("detail-close").addEventListener("click", () => $("detail").close());
$("detail").addEventListener("click", (event) => {
  if (event.target === $("detail")) $("detail").close(); // a click on the backdrop
});

loadRecentChanges().then(() => subscribe());
loadCounts();
loadResults();
loadQuality();
checkHealth();
pollMetrics();
setInterval(checkHealth, HEALTH_INTERVAL_MS);
setInterval(pollMetrics, METRICS_INTERVAL_MS);
