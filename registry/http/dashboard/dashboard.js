// The ops dashboard: reads the registry's public REST APIs and its /events stream.
// Descriptions are untrusted input: every value reaches the page as text (the el() helper below makes text nodes;
// nothing is parsed as HTML), and links are only made from URLs this module builds or checks.

const ROOT = new URL("../", import.meta.url);
const PAGE_SIZE = 25;
const FEED_LIMIT = 200;
const REFRESH_DELAY_MS = 1000;
const RESUBSCRIBE_DELAY_MS = 5000;

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

/** GET a JSON resource; a problem+json answer becomes an Error carrying its detail. */
async function getJSON(path, params) {
  const response = await fetch(url(path, params), { headers: { Accept: "application/json" } });
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
    $("stat-index").textContent = value.indexReady ? `${value.quads} quads` : "building";
    $("stat-index-detail").textContent = value.indexReady ? `${value.indexedDescriptions} descriptions indexed` : "";
    setCount("stat-unknown", value.descriptionsWithUnknownContexts);
    $("stat-unknown-detail").textContent = Object.keys(value.unknownContexts || {}).join(", ");
  }
}

// -- the table

let nextCursor = null;
let matches = 0;
let loading = 0;

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
  const row = el("tr", { tabIndex: 0, dataset: { id: item.id }, title: item.id },
    el("td", { className: "title" }, item.title || item.id,
      item.description ? el("div", { className: "sub" }, item.description) : null),
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
  const params = { ...filters, limit: PAGE_SIZE, cursor: append ? nextCursor : null, facets: append ? null : "true" };
  try {
    const page = await getJSON("api/v1/search", params);
    if (ticket !== loading) return; // a newer search has started
    showError($("table-error"), null);
    const rows = page.items.map(resultRow);
    if (append) $("rows").append(...rows);
    else $("rows").replaceChildren(...rows);
    nextCursor = page.next_cursor;
    if (page.facets) matches = page.facets.kind.reduce((sum, { count }) => sum + count, 0);
    $("matches").textContent = `${$("rows").children.length} of ${matches} shown`;
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
  }, REFRESH_DELAY_MS);
  staleChanges += 1;
  showStale(`${staleChanges} change(s) since the table was loaded.`);
}

function addEvent(type, event) {
  let data = {};
  try {
    data = JSON.parse(event.data);
  } catch {
    // a frame without JSON data: shown without an id
  }
  const verb = type.replace("thing_", "");
  const id = typeof data.id === "string" ? data.id : "";
  const title = titles.get(id);
  const name = verb === "deleted" || !id
    ? el("span", { className: "name" }, title || id)
    : el("button", { type: "button", className: "link name", onclick: () => openDetail(id) }, title || id);
  // Events carry no time of their own: this is when the page received it (replayed ones included).
  const received = new Date();
  const item = el("li", { className: `event event-${verb}`, dataset: { seq: event.lastEventId, id } },
    el("span", { className: "verb" }, verb),
    el("time", { dateTime: received.toISOString() }, received.toLocaleTimeString()),
    name,
    title ? el("span", { className: "id" }, id) : null);
  const list = $("events");
  list.prepend(item);
  $("events-empty").hidden = true;
  while (list.children.length > FEED_LIMIT) list.lastElementChild.remove();
  scheduleRefresh();
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
  const source = new EventSource(url("events"));
  let interrupted = afterFailure;
  let resumable = false; // an event with an id has arrived, so a reconnection resumes after it
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
    if (source.readyState === EventSource.CLOSED) {
      // The server refused the stream (not a dropped connection): start afresh after a pause.
      setFeedStatus("down", "disconnected");
      setTimeout(() => subscribe(true), RESUBSCRIBE_DELAY_MS);
    } else {
      setFeedStatus("connecting", "reconnecting…");
    }
  });
  for (const type of ["thing_created", "thing_updated", "thing_deleted"]) {
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
$("detail-close").addEventListener("click", () => $("detail").close());
$("detail").addEventListener("click", (event) => {
  if (event.target === $("detail")) $("detail").close(); // a click on the backdrop
});

subscribe();
loadCounts();
loadResults();
