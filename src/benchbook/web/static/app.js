// benchbook web app: collections on the left, the chosen collection's records in a table.
// The location hash is the state: #<collection>[/<schema>[/<page>]][?q=<search>&sort=<key>], e.g.
// #penguins/penguin/2?sort=body_mass_g:desc, so every view can be linked to, reloaded and
// reached with the browser's back button.
"use strict";

const PAGE = 50;
const NUMERIC = new Set(["integer", "float"]);
const state = { collection: null, schema: null, page: 1, search: "", sort: "" };
const schemaCache = new Map();
let renderToken = 0;

async function api(path) {
  const response = await fetch("/api" + path, { headers: { accept: "application/json" } });
  let body = null;
  try { body = await response.json(); } catch { /* not JSON: keep the status text */ }
  if (!response.ok) throw new Error((body && body.detail) || `${response.status} ${response.statusText}`);
  return body;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A view's hash; ``view`` may hold ``search`` and ``sort`` (left out when empty).
function link(collection, schema, page, view = {}) {
  const parts = [collection, schema].filter(Boolean).map(encodeURIComponent);
  if (page > 1) parts.push(String(page));
  const query = new URLSearchParams();
  if (view.search) query.set("q", view.search);
  if (view.sort) query.set("sort", view.sort);
  const text = query.toString();
  return "#" + parts.join("/") + (text ? "?" + text : "");
}

// The same view with other ``changes`` (a new search or sort starts again at page 1).
function here(changes = {}) {
  const view = { search: state.search, sort: state.sort, ...changes };
  return link(state.collection, state.schema, "page" in changes ? changes.page : 1, view);
}

async function loadCollections() {
  const list = document.getElementById("collections");
  try {
    const collections = await api("/collections");
    list.replaceChildren(...collections.map((c) => el("li", {},
      el("a", { href: link(c.name), "data-name": c.name, title: c.description || c.name },
        el("span", { class: "name" }, c.name), el("span", { class: "count" }, c.record_count)))));
    if (!collections.length) {
      list.replaceChildren(el("li", { class: "muted" }, "no collections yet"));
      if (!location.hash) document.getElementById("content").replaceChildren(emptyProject());
    }
  } catch (error) {
    list.replaceChildren(el("li", { class: "error" }, error.message));
  }
  route();
}

function emptyProject() {
  return el("div", { class: "empty" },
    el("p", {}, "This project has no collections yet."),
    el("p", { class: "muted" }, "Create one through the ", el("a", { href: "/docs/" }, "API"),
      " or the command line, or try ", el("code", {}, "benchbook demo"), " for a project holding the Palmer penguins."));
}

async function schema(name) {
  if (!schemaCache.has(name)) schemaCache.set(name, api("/schemas/" + encodeURIComponent(name)));
  try {
    return await schemaCache.get(name);
  } catch (error) {
    schemaCache.delete(name);
    throw error;
  }
}

async function showCollection() {
  const token = ++renderToken;
  const content = document.getElementById("content");
  document.querySelectorAll("#collections a").forEach((a) =>
    a.classList.toggle("active", a.dataset.name === state.collection));
  content.setAttribute("aria-busy", "true");
  try {
    const name = encodeURIComponent(state.collection);
    const matching = state.search ? "?" + new URLSearchParams({ search: state.search }) : "";  // tabs count what matches
    const [collection, counts] = await Promise.all([api("/collections/" + name),
      api(`/collections/${name}/record-counts${matching}`)]);
    const schemas = await Promise.all((collection.schemas || []).map(schema));
    if (!state.schema || !collection.schemas.includes(state.schema)) state.schema = collection.schemas[0] || null;
    document.title = `${collection.name} · benchbook`;
    const tabs = el("nav", { class: "tabs", "aria-label": "schemas" }, ...schemas.map((s) => el("a", {
      href: link(collection.name, s.name, 1, { search: state.search }), class: s.name === state.schema ? "active" : null,
      "data-schema": s.name, "aria-current": s.name === state.schema ? "page" : null, title: s.description || s.name,
    }, s.label || s.name, el("span", { class: "count" }, counts.counts[s.name] ?? 0))));
    const parts = [el("h2", {}, collection.name)];
    if (collection.description) parts.push(el("p", { class: "muted" }, collection.description));
    if (!schemas.length) {
      parts.push(el("p", { class: "empty" }, "This collection has no schemas yet, so it holds no records."));
    } else {
      parts.push(tabs, searchForm());
      const current = schemas.find((s) => s.name === state.schema);
      const inherited = inheritedFields(current, schemas);
      const offset = (state.page - 1) * PAGE;
      const params = new URLSearchParams({ schema: state.schema, limit: PAGE, offset });
      if (state.search) params.set("search", state.search);
      if (state.sort) params.set("sort", state.sort);
      let page;
      try {
        const withColumns = new URLSearchParams(params);
        inherited.forEach((f) => withColumns.append("columns", f.name));
        page = await api(`/collections/${name}/records?${withColumns}`);
      } catch (error) {  // the server cannot join an inherited column: show the record's own fields
        if (!inherited.length) throw error;
        inherited.length = 0;
        page = await api(`/collections/${name}/records?${params}`);
      }
      if (token !== renderToken) return;
      if (!page.items.length && page.total && state.page > 1) {  // past the end: go to the last page
        location.replace(here({ page: Math.ceil(page.total / PAGE) }));
        return;
      }
      if (page.items.length) parts.push(el("div", { class: "table-wrap" }, recordTable(current, inherited, page)), pager(page));
      else if (state.search) {
        parts.push(el("p", { class: "empty" }, `No ${current.label || current.name} record matches “${state.search}”. `,
          el("a", { href: here({ search: "" }) }, "Show all")));
      } else parts.push(el("p", { class: "empty" }, `No ${current.label || current.name} records yet.`));
    }
    if (token !== renderToken) return;
    content.replaceChildren(...parts);
  } catch (error) {
    if (token !== renderToken) return;
    content.replaceChildren(el("p", { class: "error" }, `Could not show “${state.collection}”: ${error.message}`));
  } finally {
    if (token === renderToken) content.removeAttribute("aria-busy");
  }
}

// Fields of the ancestor schemas (nearest parent first), shown before the schema's own fields.
function inheritedFields(current, schemas) {
  const own = new Set(current.fields.map((f) => f.name));
  const out = [];
  const seen = new Set([current.name]);
  for (let parent = schemas.find((s) => s.name === current.parent); parent && !seen.has(parent.name);
    parent = schemas.find((s) => s.name === parent.parent)) {
    seen.add(parent.name);
    for (const f of parent.fields) {
      if (own.has(f.name) || out.some((o) => o.name === f.name)) continue;
      out.push({ ...f, inheritedFrom: parent.label || parent.name, sortKey: `${parent.name}.${f.name}` });
    }
  }
  return out;
}

// "Bill length" with unit mm → "Bill length (mm)"; a label that already names its unit is left alone.
function heading(field) {
  const label = field.label || field.name;
  const unit = field.restrictions && field.restrictions.unit;
  const text = unit && !label.includes(`(${unit})`) ? `${label} (${unit})` : label;
  return field.inheritedFrom ? `${field.inheritedFrom} ${text.charAt(0).toLowerCase()}${text.slice(1)}` : text;
}

// Floats of one column on this page get the same number of decimals (18 → 18.0 beside 18.7).
function decimals(field, values) {
  if (field.type !== "float") return null;
  let most = 0;
  for (const v of values) {
    if (typeof v !== "number" || !Number.isFinite(v)) continue;
    const text = String(v);
    if (/e/i.test(text)) return null;
    most = Math.max(most, (text.split(".")[1] || "").length);
  }
  return Math.min(most, 6);
}

function cell(field, value, record, places) {
  const numeric = NUMERIC.has(field.type);
  const cls = numeric ? "num" : null;
  if (value === null || value === undefined || (Array.isArray(value) && !value.length)) {
    return el("td", { class: [cls, "missing"].filter(Boolean).join(" "), title: "no value" }, "–");
  }
  const labels = record.reference_labels || {};
  const list = Array.isArray(value) ? value : [value];
  switch (field.type) {
    case "boolean": return el("td", {}, value ? "yes" : "no");
    case "url": return el("td", {}, ...join(list.map((v) => el("a", { href: v, rel: "noopener noreferrer" }, v))));
    case "file": case "file_list":
      return el("td", { class: "mono" }, ...join(list.map((sha) =>
        el("a", { href: "/api/files/" + encodeURIComponent(sha), title: sha }, String(sha).slice(0, 12) + "…"))));
    case "reference": case "reference_list":
      return el("td", {}, list.map((id) => labels[id] || id).join(", "));
    case "float":
      if (places !== null && typeof value === "number") return el("td", { class: cls, title: String(value) }, value.toFixed(places));
      return el("td", { class: cls }, list.join(", "));
    default: return el("td", cls ? { class: cls } : {}, list.join(", "));
  }
}

function join(nodes) {
  return nodes.flatMap((node, i) => (i ? [", ", node] : [node]));
}

// A column heading that sorts by ``key``: ascending, then descending, then back to id order.
function sortable(key, text, attrs) {
  const [sorted, direction] = state.sort.split(":");
  const mine = sorted === key;
  const next = !mine ? key : direction === "desc" ? "" : `${key}:desc`;
  const order = mine ? (direction === "desc" ? "descending" : "ascending") : null;
  return el("th", { scope: "col", "aria-sort": order, ...attrs },
    el("a", { class: "sort", href: here({ sort: next }), title: `sort by ${text}` }, text,
      mine ? el("span", { class: "arrow", "aria-hidden": "true" }, direction === "desc" ? " ▼" : " ▲") : null));
}

function searchForm() {
  const input = el("input", { type: "search", name: "q", value: state.search, placeholder: "Search these records",
    "aria-label": "search records" });
  return el("form", { class: "search", role: "search", onsubmit: (event) => {
    event.preventDefault();
    location.hash = here({ search: input.value.trim() });
  } }, input, el("button", { type: "submit", class: "button" }, "Search"));
}

function recordTable(current, inherited, page) {
  // The record's display name is its first column unless it is just one of the fields.
  const single = /^\{(\w+)\}$/.exec(current.display_template || "");
  const showName = !(single && current.fields.some((f) => f.name === single[1]));
  const th = (f) => sortable(f.sortKey || f.name, heading(f), { class: NUMERIC.has(f.type) ? "num" : null,
    title: `${f.name} (${f.type})${f.inheritedFrom ? ", from " + f.inheritedFrom : ""}` });
  const head = el("tr", {}, showName ? sortable("natural_name", "Record", {}) : null,
    ...inherited.map(th), ...current.fields.map(th));
  const columns = [
    ...inherited.map((f) => ({ field: f, value: (record) => (record.derived || {})[f.name] })),
    ...current.fields.map((f) => ({ field: f, value: (record) => record.data[f.name] })),
  ];
  columns.forEach((c) => { c.places = decimals(c.field, page.items.map(c.value)); });
  const rows = page.items.map((record) => el("tr", { "data-id": record.id },
    showName ? el("th", { scope: "row" }, record.natural_name || record.id) : null,
    ...columns.map((c) => cell(c.field, c.value(record), record, c.places))));
  return el("table", { "aria-label": `${current.label || current.name} records` },
    el("thead", {}, head), el("tbody", {}, ...rows));
}

function pager(page) {
  const first = page.offset + 1;
  const last = Math.min(page.offset + page.items.length, page.total);
  const pages = Math.max(1, Math.ceil(page.total / PAGE));
  const go = (n) => (n >= 1 && n <= pages && n !== state.page ? here({ page: n }) : null);
  const button = (n, text, rel) => {
    const href = go(n);
    return href ? el("a", { class: "button", href, rel }, text) : el("span", { class: "button disabled", "aria-disabled": "true" }, text);
  };
  return el("nav", { class: "pager", "aria-label": "pages" },
    button(state.page - 1, "‹ previous", "prev"),
    el("span", { class: "range" }, `${first}–${last} of ${page.total}`),
    button(state.page + 1, "next ›", "next"),
    pages > 1 ? el("span", { class: "muted" }, `page ${state.page} of ${pages}`) : null);
}

function route() {
  const [path, query = ""] = location.hash.slice(1).split("?");
  const [collection, schemaName, page] = path.split("/").map((part) => {
    try { return decodeURIComponent(part); } catch { return part; }
  });
  const view = new URLSearchParams(query);
  state.search = (view.get("q") || "").trim();
  state.sort = view.get("sort") || "";
  if (!collection) {
    state.collection = null;
    document.querySelectorAll("#collections a").forEach((a) => a.classList.remove("active"));
    return;
  }
  state.collection = collection;
  state.schema = schemaName || null;
  state.page = Math.max(1, parseInt(page, 10) || 1);
  showCollection();
}

window.addEventListener("hashchange", route);
loadCollections();
