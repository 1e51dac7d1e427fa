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
const DETAIL_CHANGES = 20;

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

function askForToken(message = "This registry needs an API key or access token to read. It is kept in this page only.") {
  const given = window.prompt(message);
  token = (given || "").trim();
  if (token) setTimeout(loadKeys, 0); // an admin's credentials show the keys view
  return Boolean(token);
}

async function authorizedFetch(target, headers, options = {}, ask = true) {
  const sent = token;
  const request = () => fetch(target, {
    cache: "no-store", ...options, headers: token ? { ...headers, Authorization: `Bearer ${token}` } : headers,
  });
  const response = await request();
  // Ask once per refused token; requests refused meanwhile retry with the token another one was given.
  if (response.status === 401 && (token !== sent || (ask && askForToken()))) return request();
  return response;
}

/** Every request of the page goes through here, with the token when one was given. */
function call(path, params, headers = {}, options = {}) {
  return authorizedFetch(url(path, params), headers, options);
}

/** GET a JSON resource; a problem+json answer becomes an Error carrying its detail. */
async function getJSON(path, params) {
  return answerOf(await call(path, params, { Accept: "application/json" }));
}

/** Send ``body`` as JSON with ``method`` (POST, DELETE); the answer as getJSON gives it. */
async function sendJSON(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const options = { method, body: body === undefined ? undefined : JSON.stringify(body) };
  return answerOf(await call(path, {}, headers, options));
}

async function answerOf(response) {
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
    // Marked as a poll: the registry leaves it out of the request metrics the traffic card shows.
    const response = await call("readyz", {}, { Accept: "application/json", "Registry-Poll": "dashboard" });
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
/** The answers the traffic card counts apart: server errors, and the refusals an operator acts on. */
const STATUS_CLASSES = [
  { name: "5xx", matches: (status) => status >= 500 },
  { name: "401", matches: (status) => status === 401 },
  { name: "403", matches: (status) => status === 403 },
  { name: "429", matches: (status) => status === 429 },
  { name: "other 4xx", matches: (status) => status >= 400 && status < 500 && ![401, 403, 429].includes(status) },
];

async function pollMetrics() {
  let samples;
  try {
    // Admins only once authentication is on: other readers are told so, not asked for a token.
    const response = await authorizedFetch(url("metrics"), {}, {}, false);
    if (response.status === 401 || response.status === 403) {
      $("stat-rate").textContent = "–";
      $("stat-errors").replaceChildren("needs an admin's key: sign in");
      return;
    }
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
    classes: Object.fromEntries(STATUS_CLASSES.map(({ name, matches }) =>
      [name, total(samples, "registry_http_requests_total", (labels) => matches(Number(labels.status_code)))])),
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
    $("stat-rate").textContent = `${(requests / seconds).toFixed(1)}/s`;
    $("stat-errors").replaceChildren(...STATUS_CLASSES.map(({ name }) => {
      const errors = current.classes[name] - previousMetrics.classes[name];
      const share = requests ? ((100 * errors) / requests).toFixed(1) : "0.0";
      return el("span", { className: `status-class${errors > 0 ? " seen" : ""}`, dataset: { statusClass: name } },
        `${name}: ${(errors / seconds).toFixed(2)}/s, ${share} %`);
    }));
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
        saveState();
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
    // An idle index (REGISTRY_SPARQL_START=on-demand) is started by the first SPARQL query.
    $("stat-index").textContent = value.indexIdle ? "idle" : !value.indexReady ? "building" : counted ? `${value.indexedDescriptions} descriptions` : "ready";
    // Writes the index holds back during a burst (it applies them when the burst ends or a query needs them).
    const pending = value.pendingDescriptions ? `, ${value.pendingDescriptions} pending after a burst of writes` : "";
    $("stat-index-detail").textContent = value.indexIdle ? "starts at the first SPARQL query" : value.indexReady && counted ? `${value.indexedDescriptions} descriptions indexed${pending}` : "";
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

/** Names and ids of the capabilities a hit matched the need with (``matched``, where the search says). */
function matchedNames(item) {
  return new Set((item.matched || []).flatMap((entry) => [entry.name, entry.id]).filter(Boolean));
}

function capabilityChips(capabilities, matched = new Set()) {
  // The matched capabilities first: they are what answers the need.
  const ordered = [...capabilities].sort((a, b) => isMatched(b, matched) - isMatched(a, matched));
  const shown = ordered.slice(0, 3).map((capability) =>
    el("span", {
      className: isMatched(capability, matched) ? "chip chip-matched" : "chip",
      title: capability.id || capability.name,
    }, capability.name, capability.version ? ` ${capability.version}` : ""),
  );
  if (capabilities.length > 3) shown.push(el("span", { className: "muted" }, ` +${capabilities.length - 3}`));
  return shown;
}

function isMatched(capability, matched) {
  return matched.has(capability.name) || (capability.id ? matched.has(capability.id) : false);
}

/** How well a hit fits a need in words: its match quality, score and matched capability (none without them). */
function matchLine(item) {
  if (!item.match && !(item.matched || []).length) return null;
  const score = typeof item.score === "number" ? `score ${item.score.toFixed(2)}` : "";
  const quality = item.match
    ? el("span", { className: `match match-${item.match}`, title: score }, `${item.match} match`)
    : null;
  const names = [...new Set((item.matched || []).map((entry) => entry.name || entry.id).filter(Boolean))];
  const matched = names.length ? el("span", { className: "matched" }, ` matched ${names.join(", ")}`) : null;
  return el("div", { className: "match-line" }, quality, matched);
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
    match: item.match || "",
  };
  const row = el("tr", { tabIndex: 0, dataset },
    el("td", { className: "title" }, item.title || item.id,
      item.description ? el("div", { className: "sub" }, item.description) : null, matchLine(item), fullId(item.id)),
    el("td", {}, el("span", { className: `kind kind-${item.kind}` }, item.kind)),
    el("td", {}, item.vendor && item.vendor.name ? item.vendor.name : "–"),
    el("td", {}, item.version || "–"),
    el("td", {}, capabilityChips(item.capabilities || [], matchedNames(item))),
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
      : `${$("rows").children.length} of ${matches} shown${page.retrieval && filters.q ? ` (${page.retrieval} retrieval)` : ""}`;
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

/** The id of the description the dialog shows (null when closed). */
let currentDetail = null;

function fact(term, ...value) {
  return [el("dt", {}, term), el("dd", { dataset: { fact: term.toLowerCase().replaceAll(" ", "-") } }, ...value)];
}

/** A verdict; "breaking" is a button that opens what changed between the two versions. */
function verdictCell(id, from, to, verdict) {
  if (!verdict) return "–";
  if (verdict !== "breaking" || !from || !id) return el("span", { className: `verdict verdict-${verdict}` }, verdict);
  const button = el("button", {
    type: "button", className: "link verdict verdict-breaking open-diff", title: `What changed from ${from} to ${to}`,
    dataset: { from, to },
  }, verdict);
  button.addEventListener("click", (event) => {
    event.stopPropagation();
    showDiff(id, from, to);
  });
  return button;
}

async function openDetail(id) {
  const dialog = $("detail");
  currentDetail = id;
  saveState();
  $("detail-title").textContent = id;
  for (const list of ["detail-facts", "detail-capabilities", "detail-lint", "detail-versions", "detail-changes"]) {
    $(list).replaceChildren();
  }
  $("detail-diff-section").hidden = true;
  $("detail-description").textContent = "";
  $("detail-raw").textContent = "loading…";
  $("detail-raw-link").href = url(`things/${thingPath(id)}`).href;
  showError($("detail-error"), null);
  if (!dialog.open) dialog.showModal();

  const path = `api/v1/things/${thingPath(id)}`;
  const [summary, versions, raw, owner, lease, changes] = await Promise.allSettled([
    getJSON(`${path}/summary`),
    getJSON(`${path}/versions`),
    getJSON(`things/${thingPath(id)}`),
    getJSON(`${path}/owner`),
    getJSON(`${path}/lease`),
    getJSON("api/v1/changes", { id, limit: DETAIL_CHANGES }),
  ]);
  if (currentDetail !== id) return; // another description was opened meanwhile
  if (summary.status === "rejected") {
    showError($("detail-error"), summary.reason);
  } else {
    renderSummary(summary.value, owner.status === "fulfilled" ? owner.value : null,
      lease.status === "fulfilled" ? lease.value : null);
  }
  if (versions.status === "fulfilled") {
    renderVersions(versions.value.items);
  } else {
    $("detail-versions").append(el("tr", {}, el("td", { colSpan: 5, className: "muted" },
      versions.reason.status === 404 ? "No versions kept (the description declares no version)" : versions.reason.message)));
  }
  renderChanges(changes.status === "fulfilled" ? changes.value.items : [], changes.reason);
  $("detail-raw").textContent = raw.status === "fulfilled" ? JSON.stringify(raw.value, null, 2) : raw.reason.message;
}

function closeDetail() {
  currentDetail = null;
  saveState();
}

function renderSummary(summary, owner, lease) {
  $("detail-title").textContent = summary.title || summary.id;
  if (summary.title) titles.set(summary.id, summary.title);
  $("detail-description").textContent = summary.description || "";
  const vendor = summary.vendor || {};
  const expires = summary.expires ? `${formatTime(summary.expires)} (${relative(summary.expires)})` : "no expiry";
  $("detail-facts").append(
    ...fact("Id", el("code", {}, summary.id)),
    ...fact("Kind", summary.kind),
    ...fact("Vendor", vendor.name || "–", vendor.url ? [" (", safeHttpLink(vendor.url, vendor.url), ")"] : null),
    ...fact("Version", summary.version || "–"),
    ...fact("Owner", owner ? owner.owner || "none (registered while authentication was off)" : "–"),
    ...fact("Tenant", owner ? owner.tenant || "shared (no tenant)" : "–"),
    ...fact("Types", (summary.types || []).join(", ") || "–"),
    ...fact("Languages", (summary.languages || []).join(", ") || "–"),
    ...fact("Changed", formatTime(summary.modified)),
    ...fact("Expires", expires),
    ...fact("Last renewal", lease && lease.ttl !== null
      ? `${formatTime(lease.lastSeen)} (${relative(lease.lastSeen)}), lease of ${lease.ttl} s`
      : lease ? `no lease (no ttl); last written ${formatTime(lease.lastSeen)}` : "–"),
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
      el("tr", { className: item.current ? "current" : "", dataset: { version: item.version } },
        el("td", {}, item.version, item.current ? [" ", el("span", { className: "chip" }, "current")] : null),
        el("td", {}, formatTime(item.registered)),
        el("td", {}, item.previous_version || "–"),
        el("td", {}, verdictCell(currentDetail, item.previous_version, item.version, item.verdict)),
        el("td", {}, item.honest === null || item.honest === undefined ? "–" : item.honest ? "yes" : "no"),
      ),
    ),
  );
}

/** What a change was, in the words the activity feed uses: an expired lease is not a delete. */
function changeVerb(type, reason) {
  const verb = type.replace("thing_", "");
  return verb === "deleted" && reason === "expired" ? "expired" : verb;
}

/** Who changed what in this description: the newest changes first, each update with the members it changed. */
function renderChanges(items, failure) {
  const list = $("detail-changes");
  list.replaceChildren(...items.map((change) => {
    const verb = changeVerb(change.type, change.reason);
    const who = change.actor ? `by ${change.actor}`
      : verb === "expired" ? "its lease ran out; the purge removed it" : "by an anonymous writer (authentication off)";
    const moved = change.type === "thing_transferred" ? ` from ${change.transferred_from || "no owner"} to ${change.transferred_to}` : "";
    return el("li", { className: `change event-${verb}`, dataset: { seq: String(change.seq) } },
      el("span", { className: "verb" }, verb), " ",
      el("time", { dateTime: change.at, title: formatTime(change.at) }, relative(change.at)), " ",
      el("span", { className: "actor" }, who + moved),
      change.changed && change.changed.length
        ? el("div", { className: "changed" }, change.changed.map((pointer) => el("code", { className: "chip" }, pointer)))
        : null);
  }));
  if (!items.length) list.append(el("li", { className: "muted" }, failure ? failure.message : "none kept"));
}

/** What changed between two kept versions (a "breaking" verdict's why), in the open dialog. */
async function showDiff(id, from, to) {
  if (currentDetail !== id || !$("detail").open) await openDetail(id);
  const section = $("detail-diff-section");
  section.hidden = false;
  $("detail-diff-title").textContent = `What changed from ${from} to ${to}`;
  const list = $("detail-diff");
  list.replaceChildren(el("li", { className: "muted" }, "loading…"));
  try {
    const result = await sendJSON("POST", "api/v1/compatibility", { id, from, to });
    $("detail-diff-title").textContent =
      `What changed from ${from} to ${to}: ${result.verdict}, needs a ${result.required_bump} bump`;
    list.replaceChildren(...result.changes.map((change) =>
      el("li", { className: change.breaking ? "breaking" : "compatible" },
        el("span", { className: `verdict verdict-${change.breaking ? "breaking" : "compatible"}` },
          change.breaking ? "breaking" : "compatible"), " ",
        el("code", {}, change.pointer || "/"), " ", change.message,
        el("span", { className: "muted" }, ` (${change.kind}, ${change.bump})`))));
    if (!result.changes.length) list.append(el("li", { className: "muted" }, "no changes"));
  } catch (error) {
    list.replaceChildren(el("li", { className: "error" }, error.message));
  }
  section.scrollIntoView({ block: "nearest" });
}

// -- quality

/** "138" when every entry is listed, "138 (the 100 most warned shown)" when the list is a capped page. */
function shownOf(shown, all, which) {
  const totalCount = typeof all === "number" ? Math.max(all, shown) : shown;
  return totalCount > shown ? `${totalCount} (the ${shown} ${which} shown)` : String(totalCount);
}

async function loadQuality() {
  try {
    const report = await getJSON("api/v1/quality", { limit: QUALITY_LIMIT });
    showError($("quality-error"), null);
    // The lists hold at most QUALITY_LIMIT entries; the totals count all of them.
    $("quality-lint-count").textContent = shownOf(report.lint.length, report.lint_total, "most warned");
    $("quality-bumps-count").textContent = shownOf(report.bumps.length, report.bumps_total, "newest");
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
        el("td", {}, verdictCell(bump.id, bump.previous_version, bump.version, bump.verdict)),
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

function showEvent({ type, id, seq, at, actor, reason, replayed }) {
  const verb = changeVerb(type, reason);
  const title = titles.get(id);
  const name = verb === "deleted" || verb === "expired" || !id
    ? el("span", { className: "name" }, title || id)
    : el("button", { type: "button", className: "link name", onclick: () => openDetail(id) }, title || id);
  const item = el("li", { className: `event event-${verb}${replayed ? " replayed" : ""}`, dataset: { seq, id } },
    el("span", { className: "verb" }, verb),
    el("time", { dateTime: at.toISOString(), title: at.toLocaleString() }, at.toLocaleTimeString()),
    name,
    title ? el("span", { className: "id" }, id) : null,
    actor ? el("span", { className: "actor" }, `by ${actor}`) : null,
    verb === "expired" ? el("span", { className: "actor" }, "lease ran out, purged") : null);
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
  // A description whose lease ran out is removed by the purge: its delete says reason "expired".
  const reason = typeof data.reason === "string" ? data.reason : null;
  showEvent({ type, id, seq: event.lastEventId, at: new Date(), actor, reason, replayed: false });
  scheduleRefresh();
}

/** The latest changes from the change log, shown before the live stream starts after the newest of them. */
async function loadRecentChanges() {
  try {
    const recent = await getJSON("api/v1/changes", { limit: RECENT_CHANGES });
    for (const change of [...recent.items].reverse()) {
      showEvent({
        type: change.type, id: change.id, seq: String(change.seq), at: new Date(change.at), actor: change.actor,
        reason: change.reason, replayed: true,
      });
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

// -- the page's state in its URL (a link that can be shared opens the same view)

/** The URL parameters that hold the view: the filters, the table's order and the open description. */
const STATE_PARAMS = ["q", "kind", "vendor", "capability", "sort", "open"];

function saveState() {
  const state = new URLSearchParams();
  for (const name of Object.keys(filters)) if (filters[name]) state.set(name, filters[name]);
  if (sort) state.set("sort", sort);
  if (currentDetail) state.set("open", currentDetail);
  const query = state.toString();
  const target = `${location.pathname}${query ? `?${query}` : ""}`;
  if (target !== `${location.pathname}${location.search}`) history.replaceState(null, "", target);
}

/** The view a URL names: filters into the form, the table's order, and the description to open (if any). */
function readState() {
  const state = new URLSearchParams(location.search);
  for (const name of Object.keys(filters)) {
    filters[name] = (state.get(name) || "").trim();
    $(name).value = filters[name];
  }
  const order = state.get("sort");
  sort = order === "modified" || order === "expires" ? order : "";
  for (const th of document.querySelectorAll("#results th")) {
    th.removeAttribute("aria-sort");
    if (th.dataset.sort === (sort || "title")) th.setAttribute("aria-sort", sort === "modified" ? "descending" : "ascending");
  }
  return state.get("open");
}

// -- finding a description by its id

/** Text that can only be an id (an absolute IRI without spaces): pasted to open that description. */
function looksLikeId(text) {
  return /^[A-Za-z][A-Za-z0-9+.-]*:\S+$/.test(text);
}

/** Open the description ``text`` names, if it is an id the reader may see; true when one was opened. */
async function openPastedId(text) {
  if (!looksLikeId(text)) return false;
  try {
    await getJSON(`api/v1/things/${thingPath(text)}/summary`);
  } catch {
    return false; // not an id of a description: searched as text instead
  }
  openDetail(text);
  return true;
}

async function search() {
  readForm();
  if (await openPastedId(filters.q)) {
    filters.q = "";
    $("q").value = "";
  }
  saveState();
  loadResults();
}

// -- API keys (shown to admins only)

async function loadKeys() {
  const section = $("keys");
  if (!token) {
    section.hidden = true;
    return;
  }
  let listed;
  try {
    // Without a prompt: credentials that are not an admin's simply do not show the view.
    const response = await fetch(url("api/v1/keys"), {
      cache: "no-store", headers: { Accept: "application/json", Authorization: `Bearer ${token}` },
    });
    if (!response.ok) throw new Error(String(response.status));
    listed = await response.json();
  } catch {
    section.hidden = true;
    $("keys-rows").replaceChildren();
    $("sign-in").textContent = "signed in";
    return;
  }
  section.hidden = false;
  $("sign-in").textContent = "signed in as an admin";
  renderKeys(listed.items);
}

function renderKeys(items) {
  $("keys-rows").replaceChildren(...items.map((key) => {
    const revoke = key.state === "active"
      ? el("button", { type: "button", className: "revoke", title: `Revoke ${key.name}` }, "revoke")
      : null;
    if (revoke) revoke.addEventListener("click", () => revokeKey(key));
    return el("tr", { dataset: { keyId: key.id, state: key.state } },
      el("td", { className: "title" }, key.name, el("div", { className: "full-id" }, el("code", {}, key.id))),
      el("td", {}, key.scopes.join(", ")),
      el("td", {}, key.ownerIdentity, key.tenant ? el("div", { className: "muted" }, `tenant ${key.tenant}`) : null),
      el("td", {}, [...key.namespaces, ...key.vendors.map((vendor) => `vendor ${vendor}`)].join(", ") || "any"),
      el("td", { title: key.expires ? formatTime(key.expires) : "never" }, key.expires ? relative(key.expires) : "never"),
      el("td", { title: key.lastUsed ? formatTime(key.lastUsed) : "" }, key.lastUsed ? relative(key.lastUsed) : "never"),
      el("td", {}, el("span", { className: `key-state key-${key.state}` }, key.state), " ", revoke));
  }));
}

const listOf = (text) => text.split(",").map((part) => part.trim()).filter(Boolean);

async function createKey(event) {
  event.preventDefault();
  const form = $("key-form");
  const body = {
    name: form.elements["key-name"].value.trim(),
    scopes: [form.elements["key-scope"].value],
    owner: form.elements["key-owner"].value.trim() || null,
    namespaces: listOf(form.elements["key-namespaces"].value),
    vendors: listOf(form.elements["key-vendors"].value),
    tenant: form.elements["key-tenant"].value.trim() || null,
    expires: form.elements["key-expires"].value.trim() || null,
  };
  showError($("keys-error"), null);
  try {
    const created = await sendJSON("POST", "api/v1/keys", body);
    // The secret is in this answer only: shown once, kept nowhere, gone when the box is closed.
    $("key-secret").textContent = created.secret;
    $("key-secret-name").textContent = created.name;
    $("key-secret-box").hidden = false;
    form.reset();
    loadKeys();
  } catch (error) {
    showError($("keys-error"), error);
  }
}

async function revokeKey(key) {
  if (!window.confirm(`Revoke the key ${key.name} (${key.id})? It authenticates nothing from then on.`)) return;
  showError($("keys-error"), null);
  try {
    await sendJSON("DELETE", `api/v1/keys/${encodeURIComponent(key.id)}`);
    loadKeys();
  } catch (error) {
    showError($("keys-error"), error);
  }
}

// -- wiring

function readForm() {
  for (const name of Object.keys(filters)) filters[name] = $(name).value.trim();
}

$("search").addEventListener("submit", (event) => {
  event.preventDefault();
  search();
});
$("kind").addEventListener("change", () => {
  readForm();
  saveState();
  loadResults();
});
$("clear").addEventListener("click", () => {
  for (const name of Object.keys(filters)) $(name).value = "";
  readForm();
  saveState();
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
  saveState();
  loadResults();
}
$("detail-close").addEventListener("click", () => $("detail").close());
$("detail").addEventListener("click", (event) => {
  if (event.target === $("detail")) $("detail").close(); // a click on the backdrop
});
$("detail").addEventListener("close", closeDetail);
$("sign-in").addEventListener("click", () => {
  if (askForToken("An API key or access token (an admin's shows the keys). It is kept in this page only.")) {
    loadCounts();
    loadResults();
    loadQuality();
  }
});
$("key-form").addEventListener("submit", createKey);
$("key-secret-close").addEventListener("click", () => {
  $("key-secret").textContent = "";
  $("key-secret-box").hidden = true;
});
window.addEventListener("popstate", () => {
  const open = readState();
  loadResults();
  if (open) openDetail(open);
  else if ($("detail").open) $("detail").close();
});

const opened = readState();
loadRecentChanges().then(() => subscribe());
loadCounts();
loadResults();
loadQuality();
checkHealth();
pollMetrics();
if (opened) openDetail(opened);
setInterval(checkHealth, HEALTH_INTERVAL_MS);
setInterval(pollMetrics, METRICS_INTERVAL_MS);
