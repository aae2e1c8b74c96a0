// benchbook web app: collections on the left, the chosen collection's records in a table.
"use strict";

const PAGE = 50;
const state = { collection: null, schema: null, offset: 0 };

async function api(path) {
  const response = await fetch("/api" + path, { headers: { accept: "application/json" } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.detail || response.statusText);
  return body;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "onclick") node.addEventListener("click", value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  return node;
}

function show(value) {
  if (value === null || value === undefined) return "";
  if (Array.isArray(value)) return value.join(", ");
  return String(value);
}

async function loadCollections() {
  const list = document.getElementById("collections");
  try {
    const collections = await api("/collections");
    list.replaceChildren(...collections.map((c) => el("li", {},
      el("a", { href: "#" + encodeURIComponent(c.name), "data-name": c.name },
        c.name, el("span", { class: "count" }, c.record_count)))));
    if (!collections.length) list.replaceChildren(el("li", { class: "muted" }, "no collections yet"));
  } catch (error) {
    list.replaceChildren(el("li", { class: "error" }, error.message));
  }
  route();
}

async function showCollection() {
  const content = document.getElementById("content");
  document.querySelectorAll("#collections a").forEach((a) =>
    a.classList.toggle("active", a.dataset.name === state.collection));
  try {
    const collection = await api("/collections/" + encodeURIComponent(state.collection));
    const schemas = await Promise.all((collection.schemas || []).map((name) => api("/schemas/" + encodeURIComponent(name))));
    if (!state.schema || !collection.schemas.includes(state.schema)) state.schema = collection.schemas[0] || null;
    const tabs = el("div", { class: "tabs" }, ...schemas.map((s) => el("button", {
      class: s.name === state.schema ? "active" : "",
      onclick: () => { state.schema = s.name; state.offset = 0; showCollection(); },
    }, s.label || s.name)));
    const parts = [el("h2", {}, collection.name), el("p", { class: "muted" }, collection.description || ""), tabs];
    if (state.schema) {
      const schema = schemas.find((s) => s.name === state.schema);
      const query = `?schema=${encodeURIComponent(state.schema)}&limit=${PAGE}&offset=${state.offset}`;
      const page = await api(`/collections/${encodeURIComponent(state.collection)}/records${query}`);
      parts.push(recordTable(schema, page), pager(page));
    }
    content.replaceChildren(...parts);
  } catch (error) {
    content.replaceChildren(el("p", { class: "error" }, error.message));
  }
}

function recordTable(schema, page) {
  const fields = schema.fields;
  const numeric = new Set(["integer", "float"]);
  const head = el("tr", {}, el("th", {}, "name"), ...fields.map((f) => el("th", {}, f.label || f.name)));
  const rows = page.items.map((record) => el("tr", { "data-id": record.id },
    el("td", {}, record.natural_name || record.id),
    ...fields.map((f) => el("td", numeric.has(f.type) ? { class: "num" } : {}, show(record.data[f.name])))));
  return el("table", { "aria-label": "records" }, el("thead", {}, head), el("tbody", {}, ...rows));
}

function pager(page) {
  const last = Math.min(page.offset + page.limit, page.total);
  return el("div", { class: "pager" },
    el("button", { onclick: () => { state.offset = Math.max(0, state.offset - PAGE); showCollection(); } }, "‹ previous"),
    el("span", { class: "muted" }, page.total ? `${page.offset + 1}–${last} of ${page.total}` : "no records"),
    el("button", { onclick: () => { if (last < page.total) { state.offset += PAGE; showCollection(); } } }, "next ›"));
}

function route() {
  const name = decodeURIComponent(location.hash.slice(1));
  if (!name) return;
  if (name !== state.collection) { state.collection = name; state.schema = null; state.offset = 0; }
  showCollection();
}

window.addEventListener("hashchange", route);
loadCollections();
