// A collection's records table (#/c/:collection): a tab per schema; own, inherited and
// `ref.target` columns through a column chooser; the filter builder (lib/records-filter.js);
// sort by header; search; paging anywhere; child counts linking to the children; ticked rows for
// bulk delete, run-many and export; CSV export of the same query; saved views. Every part of the
// state lives in the hash query: schema, filter, sort, q, page, limit, columns, parent, view.
import { html, useState, useEffect, useRef } from "../lib/html.js";
import { get, post, del, apiUrl } from "../lib/api.js";
import { href, navigate, seg } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, Field, Modal, Confirm, notify, useTitle, formatValue, formatCount } from "../lib/ui.js";
import { counted, nounFor } from "../lib/counting.js";
import { pokeStatus } from "../lib/status.js";
import { VIEW_NAME, VIEW_RULE, nameError, viewNameOf } from "../lib/names.js";
import { catalogue, FilterBuilder, parseFilter, errorPathOf, asRoot, compact } from "../lib/records-filter.js";
import { leavesOf } from "../lib/filter-tree.js";
import { ColumnChooser, columnsParam, sortKeyOf, cellValue, toCsv, download } from "../lib/records-table.js";
import { NewRecord } from "../lib/records-new.js";
import { DeleteSelected } from "../lib/delete-referenced.js";
import { RecordsChart, ViewSwitch } from "../lib/records-chart.js";

const LIMITS = [25, 50, 100, 200, 500];

export default function Records({ params, query, path }) {
  const name = params.collection;
  useTitle(name);
  const meta = useLoad((signal) => Promise.all([
    get(`/collections/${seg(name)}`, {}, { signal }),
    get("/schemas", {}, { signal }),
    get("/schemas/field-types", {}, { signal }),
    // Which schema holds the records: a collection opens on it, not on its first schema.
    query.schema ? Promise.resolve(null) : get(`/collections/${seg(name)}/record-counts`, {}, { signal }).catch(() => null),
  ]), [name, !query.schema]);
  if (meta.loading && !meta.data) return html`<section class="page"><h1>${name}</h1><${Loading} /></section>`;
  if (meta.error) return html`<section class="page"><h1>${name}</h1><${ErrorBox} error=${meta.error} onRetry=${meta.reload} />
    <p><a href=${href("/")}>All collections</a></p></section>`;
  const [collection, schemas, types, counts] = meta.data;
  return html`<${Table} collection=${collection} schemas=${schemas} types=${types} query=${query} path=${path}
    fullest=${fullest(collection.schemas || [], counts)} />`;
}

// The schema of `names` holding the most records by `counts` (RecordCountsResponse; the first
// schema on a tie, or when the counts are not known).
function fullest(names, counts) {
  const by = (counts && counts.counts) || {};
  return names.reduce((best, n) => ((by[n] || 0) > (by[best] || 0) ? n : best), names[0]);
}

function Table({ collection, schemas, types, query, path, fullest: opening }) {
  const name = collection.name;
  const schemaNames = collection.schemas || [];
  const schema = query.schema || opening || schemaNames[0];
  const cat = schema ? catalogue(schemas, schema, schemaNames) : null;
  const set = (changes, { keepPage = false, replace = false } = {}) => {
    const next = { ...query, view: undefined, ...changes };
    if (!keepPage && !("page" in changes)) next.page = undefined;
    navigate(path, next, { replace });
  };
  const head = html`<div class="page-head">
      <h1>${name}</h1>
      ${collection.description ? html`<p class="muted">${collection.description}</p>` : null}
      <div class="actions">
        <a href=${href(`/c/${seg(name)}/import`, { schema })}>Import a file</a>
        <a href=${href(`/c/${seg(name)}/settings`)}>Settings</a>
      </div>
    </div>
    <nav class="tabs" aria-label="Schemas">
      ${schemaNames.map((s) => html`<a href=${href(path, { schema: s })} aria-current=${s === schema ? "page" : undefined}>${s}</a>`)}
    </nav>`;
  if (!schemaNames.length) {
    return html`<section class="page records">${head}<div class="card"><p>This collection lists no schemas yet.</p>
      <p><a href=${href(`/c/${seg(name)}/settings`)}>Add schemas in its settings</a>, or${" "}<a href=${href(`/c/${seg(name)}/import`)}>import a file</a> creating a schema from it.</p></div></section>`;
  }
  if (!cat || !schemaNames.includes(schema)) {
    return html`<section class="page records">${head}<${ErrorBox} error=${new Error(`The collection ${name} has no schema '${schema}'.`)} /></section>`;
  }
  return html`<section class="page records">${head}<${ViewSwitch} path=${path} query=${query} />
    ${query.chart ? html`<${RecordsChart} key=${schema} collection=${collection} cat=${cat} query=${query} path=${path} />`
      : html`<${SchemaTable} key=${schema} collection=${collection} cat=${cat} types=${types} query=${query} path=${path} set=${set} schema=${schema} />`}</section>`;
}

function useViewExpansion(name, schema, query, path) {
  const done = useRef(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (!query.view) { done.current = null; return; }
    const key = `${schema}/${query.view}`;
    if (done.current === key) return;
    done.current = key;
    let live = true;
    get(`/schemas/${seg(schema)}/views/${seg(query.view)}`).then((v) => {
      if (!live) return;
      setError(null);
      navigate(path, { ...query, schema: v.schema,
        filter: query.filter || (v.filter ? JSON.stringify(v.filter) : undefined),
        sort: query.sort || (v.sort && v.sort.length ? v.sort.join(",") : undefined),
        q: query.q || v.search || undefined,
        columns: query.columns || (v.columns && v.columns.length ? v.columns.join(",") : undefined),
        limit: query.limit || v.page_size || undefined, view: v.name }, { replace: true });
    }, (e) => live && setError(e));
    return () => { live = false; };
  }, [schema, query.view]);
  return error;
}

function SchemaTable({ collection, cat, types, query, path, set, schema }) {
  const name = collection.name;
  const tree = parseFilter(query.filter);
  const sort = query.sort ? query.sort.split(",").filter(Boolean) : [];
  const limit = LIMITS.includes(Number(query.limit)) ? Number(query.limit) : (Number(query.limit) > 0 && Number(query.limit) <= 1000 ? Number(query.limit) : 50);
  const page = Math.max(1, parseInt(query.page, 10) || 1);
  const chosen = (query.columns ? query.columns.split(",") : cat.defaultColumns).filter((c) => cat.columns[c]);
  const columns = chosen.includes("natural_name") ? chosen : ["natural_name", ...chosen];
  const viewError = useViewExpansion(name, schema, query, path);
  const waitingForView = query.view && !query.columns && !query.filter && !query.sort && !viewError;

  const common = { schema, filter: tree || undefined, sort: sort.length ? sort : undefined, search: query.q || undefined,
    parent_record_id: query.parent || undefined };
  const records = useLoad((signal) => {
    if (waitingForView) return Promise.resolve(undefined);
    const at = location.hash;
    return get(`/collections/${seg(name)}/records`, { ...common, limit, offset: (page - 1) * limit,
      child_counts: cat.children.length ? true : undefined, columns: columnsParam(cat, columns) }, { signal })
      .then((d) => ({ ...d, hash: at }));
  },
  [name, schema, query.filter, query.sort, query.q, query.parent, page, limit, query.columns, waitingForView]);
  const views = useLoad((signal) => get(`/schemas/${seg(schema)}/views`, {}, { signal }), [schema]);
  const data = records.data;
  // a total the server stopped counting (total_exact false) is a lower bound: "Count all" asks
  // for the exact one (limit 0 always counts exactly), kept until the query changes
  const [exactCount, setExactCount] = useState(null);
  useEffect(() => setExactCount(null), [name, schema, query.filter, query.q, query.parent]);
  const bounded = data && data.total_exact === false && exactCount === null;
  const total = exactCount !== null ? exactCount : data ? data.total : 0;
  const countAll = () => get(`/collections/${seg(name)}/records`, { ...common, limit: 0 })
    .then((r) => setExactCount(r.total), (e) => notify(`Counting failed: ${e.message}`, "error"));
  // past a lower bound there may be more pages: one more than the bound shows while this page is full
  const items = data ? data.items : [];
  const pages = Math.max(1, Math.ceil(total / limit) + (bounded && items.length === limit ? 1 : 0));
  const [selected, setSelected] = useState(() => new Set());
  useEffect(() => setSelected(new Set()), [data]);
  const [dialog, setDialog] = useState(null);
  const [controls, setControls] = useState(false);  // below 700 px: the folded controls shown
  const fold = `narrow-fold${controls ? " open" : ""}`;
  const conditions = leavesOf(tree).length;
  const filterError = records.error && errorPathOf(records.error) !== null ? records.error : null;

  // the export holds the columns shown, in order (inherited and ref.target ones too), with the id first
  const exportHref = apiUrl(`/collections/${seg(name)}/export.csv`,
    { ...common, columns: ["id", ...columns.filter((c) => c !== "id")] });
  const toggle = (id) => { const s = new Set(selected); if (s.has(id)) s.delete(id); else s.add(id); setSelected(s); };
  const allTicked = items.length > 0 && items.every((r) => selected.has(r.id));

  return html`<div class="records-body" aria-busy=${records.loading ? "true" : "false"}
      data-loaded-for=${data && !records.loading ? data.hash : ""}>
    <button type="button" class="controls-toggle" aria-expanded=${controls ? "true" : "false"}
      aria-controls="records-views records-filter records-columns" onClick=${() => setControls(!controls)}>
      Filters and columns${conditions ? ` (${counted(conditions, "condition")})` : ""}</button>
    <div id="records-views" class=${fold}>
      ${cat.schema.description ? html`<p class="muted schema-description">${cat.schema.description}</p>` : null}
      <${ViewsBar} views=${views} schema=${schema} collection=${name} query=${query} path=${path} viewError=${viewError}
        state=${{ columns, filter: tree, sort, search: query.q || null, page_size: limit }} />
    </div>
    <${SearchBox} key=${query.q || ""} value=${query.q || ""} onSearch=${(q) => set({ q: q || undefined })} schema=${cat.schema} />
    <div id="records-filter" class=${fold}>
      <${FilterBuilder} cat=${cat} types=${types} tree=${tree} errorPath=${filterError ? errorPathOf(filterError) : null}
        onChange=${(t) => set({ filter: t ? JSON.stringify(t) : undefined })} />
    </div>
    ${query.parent ? html`<${ParentChip} id=${query.parent} onRemove=${() => set({ parent: undefined })} />` : null}
    ${query.q && data && total === 0 && cat.ancestors.length ? html`<${InheritedSearchHint} name=${name} cat=${cat} q=${query.q}
      onUse=${(leafGroup) => set({ q: undefined, filter: JSON.stringify(compact({ and: [...(tree ? [asRoot(tree)] : []), leafGroup] })) })} />` : null}
    <${ErrorBox} error=${records.error} onRetry=${records.reload} />
    <div class="toolbar records-actions">
      <span id="records-columns" class=${fold}>
        <${ColumnChooser} cat=${cat} columns=${columns} onChange=${(cols) => set({ columns: cols.join(",") }, { keepPage: true })} />
        <a class="button" href=${exportHref} download=${`${name}-${schema}.csv`}
          title="Every record this query matches (all pages), with the columns shown">Export CSV${data ? ` (${formatCount(total)}${bounded ? "+" : ""})` : ""}</a>
      </span>
      <button type="button" onClick=${() => setDialog({ kind: "new" })}>New record</button>
      <span class="selection" role="status">${selected.size ? html`<strong>${formatCount(selected.size)} selected</strong>` : null}</span>
      ${selected.size ? html`<button type="button" class="danger" onClick=${() => setDialog({ kind: "delete" })}>Delete selected…</button>
        <button type="button" onClick=${() => setDialog({ kind: "run" })}>Run a workflow on selected…</button>
        <button type="button" onClick=${() => download(`${name}-${schema}-selected.csv`,
          toCsv(cat, columns, items.filter((r) => selected.has(r.id))))}>Export selected</button>
        <button type="button" class="link" onClick=${() => setSelected(new Set())}>Clear selection</button>` : null}
    </div>
    ${records.loading && !data ? html`<${Loading} label="Loading records…" />` : null}
    ${data ? html`<${Grid} cat=${cat} columns=${columns} items=${items} sort=${sort} collection=${name} path=${path}
      selected=${selected} toggle=${toggle} allTicked=${allTicked}
      toggleAll=${() => setSelected(allTicked ? new Set() : new Set(items.map((r) => r.id)))}
      onSort=${(key, add) => {
        const current = sort.find((s) => s.split(":")[0] === key);
        const dir = current && !current.endsWith(":desc") ? "desc" : "asc";
        const keyed = `${key}:${dir}`;
        const next = add ? [...sort.filter((s) => s.split(":")[0] !== key), keyed] : [keyed];
        set({ sort: next.join(",") });
      }} />
      ${!items.length ? html`<p class="muted empty">No ${schema} records match.</p>` : null}
      <${Pager} page=${page} pages=${pages} total=${total} bounded=${bounded} countAll=${countAll} limit=${limit} count=${items.length}
        go=${(p) => set({ page: p > 1 ? p : undefined })} setLimit=${(l) => set({ limit: l === 50 ? undefined : l })} />` : null}
    ${records.loading && data ? html`<p class="loading loading-more muted" aria-live="polite">Updating…</p>` : null}
    ${dialog && dialog.kind === "delete" ? html`<${DeleteSelected} ids=${[...selected]} schema=${schema}
      onDone=${(r) => { notify(`Deleted ${counted(r.deleted, "record")}`, "ok"); records.reload(); }} onClose=${() => setDialog(null)} />` : null}
    ${dialog && dialog.kind === "run" ? html`<${RunMany} schema=${schema} ids=${[...selected]} onClose=${() => setDialog(null)} />` : null}
    ${dialog && dialog.kind === "new" ? html`<${NewRecord} collection=${name} cat=${cat} types=${types} parent=${query.parent}
      onClose=${() => setDialog(null)} onDone=${(r) => { setDialog(null); notify(`Created ${r.natural_name || r.id}`, "ok"); records.reload(); }} />` : null}
  </div>`;
}

function SearchBox({ value, onSearch, schema }) {
  const [text, setText] = useState(value);
  return html`<form class="toolbar search" role="search" onSubmit=${(e) => { e.preventDefault(); onSearch(text.trim()); }}>
    <input type="search" data-search aria-label="Search records" placeholder=${`Search ${schema.name} values (press /)`}
      value=${text} onInput=${(e) => setText(e.target.value)} aria-describedby="search-hint" />
    <button type="submit">Search</button>
    ${value ? html`<button type="button" class="link" onClick=${() => { setText(""); onSearch(""); }}>Clear search</button>` : null}
    <small id="search-hint" class="muted">Searches the ${schema.label || schema.name} records' own values.</small>
  </form>`;
}

// The API's search looks at a record's own values only: a value of an ancestor (the island of a
// penguin) finds nothing from the child tab. Say so, count the matches among the ancestors, and
// offer the same search as an ancestor filter.
function InheritedSearchHint({ name, cat, q, onUse }) {
  const hits = useLoad((signal) => Promise.all(cat.ancestors.map((a) =>
    get(`/collections/${seg(name)}/records`, { schema: a.name, search: q, limit: 0 }, { signal })
      .then((r) => ({ schema: a, total: r.total }), () => ({ schema: a, total: 0 })))), [name, cat.schema.name, q]);
  const found = (hits.data || []).filter((h) => h.total > 0);
  const textTypes = ["string", "url", "tags"];
  return html`<div class="warn-box" role="status" data-testid="inherited-search">
    <p>Search looks only at the <strong>${cat.schema.name}</strong> records' own values, not at values they inherit
      from ${cat.ancestors.map((a) => a.name).join(", ")}.
      ${hits.data && !found.length ? " No ancestor record matches either." : null}</p>
    ${found.map((h) => {
      const leaves = (h.schema.fields || []).filter((f) => !f.deleted_at && textTypes.includes(f.type))
        .map((f) => ({ field: f.name, op: "contains", value: q, schema: h.schema.name }));
      return html`<p>“${q}” matches ${counted(h.total, `${h.schema.name} record`)}.
        ${leaves.length ? html`<button type="button" onClick=${() => onUse({ or: leaves })}>
          Show ${cat.schema.name} records whose ${h.schema.name} contains “${q}”</button>` : null}</p>`;
    })}
  </div>`;
}

function ParentChip({ id, onRemove }) {
  const parent = useLoad((signal) => get(`/records/${seg(id)}`, {}, { signal }), [id]);
  const label = parent.data ? `${parent.data.schema_name} ${parent.data.natural_name || id}` : id;
  return html`<p class="chips parent-chip"><span class="chip">Children of
    <a href=${href(`/r/${seg(id)}`)}>${label}</a>
    <button type="button" class="icon" aria-label="Remove the parent condition" onClick=${onRemove}>×</button></span></p>`;
}

// One Tab stop for the whole body: the active row (tabindex 0; the others and every control
// inside a row are -1). On a focused row: Up/Down, Home/End and PageUp/PageDown (10 rows) move,
// Space ticks it (as a click on its checkbox does), Enter opens the record.
const PAGE_STEP = 10;

function Grid({ cat, columns, items, sort, collection, selected, toggle, allTicked, toggleAll, onSort }) {
  const [active, setActive] = useState(0);
  const body = useRef(null);
  const rows = () => (body.current ? [...body.current.querySelectorAll("tr[data-id]")] : []);
  const onKey = (e) => {
    const tr = e.target.closest && e.target.closest("tr[data-id]");
    if (!tr || e.altKey || e.ctrlKey || e.metaKey) return;
    const list = rows();
    const at = list.indexOf(tr);
    const onRow = e.target === tr;
    let next = null;
    if (e.key === "ArrowDown") next = Math.min(list.length - 1, at + 1);
    else if (e.key === "ArrowUp") next = Math.max(0, at - 1);
    else if (e.key === "PageDown") next = Math.min(list.length - 1, at + PAGE_STEP);
    else if (e.key === "PageUp") next = Math.max(0, at - PAGE_STEP);
    else if (e.key === "Home" && onRow) next = 0;
    else if (e.key === "End" && onRow) next = list.length - 1;
    else if (e.key === "Enter" && onRow) { e.preventDefault(); navigate(`/r/${seg(tr.dataset.id)}`); return; }
    else if (e.key === " " && onRow) { e.preventDefault(); toggle(tr.dataset.id); return; }
    if (next === null) return;
    e.preventDefault();
    setActive(next);
    list[next].focus();
  };
  const sortOf = (key) => {
    const s = key && sort.find((x) => x.split(":")[0] === key);
    return s ? (s.endsWith(":desc") ? "descending" : "ascending") : undefined;
  };
  return html`<div class="table-wrap">
    <table class="grid records-grid" aria-label=${`${cat.schema.name} records`} aria-describedby="grid-keys">
      <thead><tr>
        <th scope="col" class="tick"><input type="checkbox" aria-label="Select all rows on this page" checked=${allTicked} onChange=${toggleAll} /></th>
        ${columns.map((key) => {
          const col = cat.columns[key];
          const sortKey = sortKeyOf(col);
          const dir = sortOf(sortKey);
          const num = col.field && ["integer", "float"].includes(col.field.type);
          const unit = col.field && col.field.restrictions && col.field.restrictions.unit;
          const label = unit ? `${col.label} (${unit})` : col.label;  // the unit in the header, not in every cell
          return html`<th scope="col" aria-sort=${dir || (sortKey ? "none" : undefined)} class=${(num ? "num " : "") + col.kind}
              data-column=${key}>
            ${sortKey ? html`<button type="button" class="sort" title="Sort (shift-click adds a second sort)"
              onClick=${(e) => onSort(sortKey, e.shiftKey)}>${label}${dir ? (dir === "ascending" ? " ▲" : " ▼") : ""}</button>` : label}</th>`;
        })}
        ${cat.children.length ? html`<th scope="col">Children</th>` : null}
      </tr></thead>
      <tbody ref=${body} onKeyDown=${onKey}>
        ${items.map((r, i) => html`<tr key=${r.id} data-id=${r.id} tabindex=${i === Math.min(active, items.length - 1) ? 0 : -1}
            onFocusIn=${() => setActive(i)} class=${selected.has(r.id) ? "ticked" : ""}>
          <td class="tick"><input type="checkbox" tabindex="-1" aria-label=${`Select ${r.natural_name || r.id}`} checked=${selected.has(r.id)}
            onChange=${() => toggle(r.id)} /></td>
          ${columns.map((key) => {
            const col = cat.columns[key];
            if (key === "natural_name") return html`<td class="name"><a href=${href(`/r/${seg(r.id)}`)} tabindex="-1">${r.natural_name || r.id}</a></td>`;
            const num = col.field && ["integer", "float"].includes(col.field.type);
            return html`<td class=${num ? "num" : ""}>${cellValue(col, r)}</td>`;
          })}
          ${cat.children.length ? html`<td class="children">${cat.children.map((c) => {
            const n = (r.child_counts || {})[c.name] || 0;
            return html`<a href=${href(`/c/${seg(collection)}`, { schema: c.name, parent: r.id })} tabindex="-1"
              aria-label=${`${n} ${c.name} children of ${r.natural_name || r.id}`}>${formatCount(n)} ${c.name}</a> `;
          })}</td>` : null}
        </tr>`)}
      </tbody>
    </table>
    <p id="grid-keys" class="sr-only">The rows are one Tab stop: arrow keys, Page Up, Page Down, Home and End move through them; Space ticks the row; Enter opens the record.</p>
  </div>`;
}

function Pager({ page, pages, total, bounded, countAll, limit, count, go, setLimit }) {
  const [text, setText] = useState(String(page));
  useEffect(() => setText(String(page)), [page]);
  const first = total ? (page - 1) * limit + 1 : 0;
  return html`<nav class="pager" aria-label="Pages">
    <button type="button" onClick=${() => go(1)} disabled=${page <= 1}>First</button>
    <button type="button" onClick=${() => go(page - 1)} disabled=${page <= 1}>Previous</button>
    <form class="page-jump" onSubmit=${(e) => { e.preventDefault(); const n = parseInt(text, 10); if (n >= 1) go(Math.min(n, pages)); }}>
      <label for="page-number">Page</label>
      <input id="page-number" type="number" min="1" max=${pages} value=${text} onInput=${(e) => setText(e.target.value)} />
      <span> of <span data-testid="pages">${bounded ? "at least " : ""}${formatCount(pages)}</span></span>
      <button type="submit">Go</button>
    </form>
    <button type="button" onClick=${() => go(page + 1)} disabled=${page >= pages}>Next</button>
    <button type="button" onClick=${() => go(pages)} disabled=${page >= pages || bounded}
      title=${bounded ? "Count all the records first: the last page is not known yet" : null}>Last</button>
    <span class="muted" data-testid="range">${count ? `${formatCount(first)}–${formatCount(first + count - 1)} of ` : ""}${bounded ? "more than " : ""}<span data-testid="total">${formatCount(total)}</span> ${nounFor(total, "record")}</span>
    ${bounded ? html`<button type="button" class="link" onClick=${countAll}
      title="The count stopped early to keep the page quick; count every matching record">Count all</button>` : null}
    <label class="page-size">Per page
      <select value=${limit} onChange=${(e) => setLimit(Number(e.target.value))}>
        ${[...new Set([...LIMITS, limit])].sort((a, b) => a - b).map((l) => html`<option value=${l}>${l}</option>`)}</select></label>
  </nav>`;
}

function ViewsBar({ views, schema, collection, query, path, state, viewError }) {
  const [saving, setSaving] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const list = (views.data || []).filter((v) => !v.collection || v.collection === collection);
  const current = list.find((v) => v.name === query.view || v.id === query.view);
  return html`<div class="toolbar views-bar">
    <label class="inline">Saved view
      <select value=${current ? current.name : ""} onChange=${(e) => navigate(path, { schema, view: e.target.value || undefined })}>
        <option value="">${query.view && !current && !views.loading ? `(${query.view}: not found)` : "— none —"}</option>
        ${list.map((v) => html`<option value=${v.name}>${v.label || v.name}</option>`)}
      </select></label>
    <button type="button" onClick=${() => setSaving(true)}>Save as view…</button>
    ${current ? html`<button type="button" class="link" onClick=${() => setDeleting(true)}>Delete view ${current.label || current.name}</button>` : null}
    <${ErrorBox} error=${viewError || views.error} />
    ${saving ? html`<${SaveView} schema=${schema} collection=${collection} state=${state} onClose=${() => setSaving(false)}
      onDone=${(v) => { setSaving(false); views.reload(); notify(`Saved view ${v.name}`, "ok"); navigate(path, { ...query, view: v.name }); }} />` : null}
    ${deleting && current ? html`<${Confirm} title="Delete view" danger confirmLabel="Delete view"
      message=${html`<p>Delete the saved view <strong>${current.label || current.name}</strong>? Its history entry can bring it back.</p>`}
      onConfirm=${async () => { await del(`/schemas/${seg(schema)}/views/${seg(current.name)}`); views.reload();
        notify(`Deleted view ${current.name}`, "ok"); navigate(path, { ...query, view: undefined }); return true; }}
      onClose=${() => setDeleting(false)} />` : null}
  </div>`;
}

function SaveView({ schema, collection, state, onClose, onDone }) {
  // the label is what people read; the name (in addresses and the API) follows it until edited
  const [form, setForm] = useState({ name: "", label: "", here: true, named: false });
  const action = useAction(() => post(`/schemas/${seg(schema)}/views`, {
    name: form.name, label: form.label || null, collection: form.here ? collection : null,
    columns: state.columns, filter: state.filter || null, sort: state.sort, search: state.search, page_size: state.page_size }));
  const errors = action.error && action.error.fieldErrors ? action.error.fieldErrors() : {};
  const placed = ["name", "label"].some((k) => errors[k]);
  const typedName = form.name && !VIEW_NAME.test(form.name) ? VIEW_RULE : null;
  return html`<${Modal} title="Save as view" onClose=${onClose}>
    <form class="dialog-body" onSubmit=${async (e) => { e.preventDefault(); const v = await action.run(); if (v) onDone(v); }}>
      <p class="muted">Saves this table's columns, filter, sort, search and page size.</p>
      <${Field} label="Label" error=${errors.label} hint="What the view is called in the list, e.g. Big Gentoo bills.">
        ${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.label}
          onInput=${(e) => setForm({ ...form, label: e.target.value, name: form.named ? form.name : viewNameOf(e.target.value) })} />`}<//>
      <${Field} label="View name" error=${nameError(errors.name, VIEW_RULE) || typedName}
        hint=${`Used in addresses; follows the label until you change it. ${VIEW_RULE}`}>
        ${(id, d) => html`<input id=${id} aria-describedby=${d} required value=${form.name}
          onInput=${(e) => setForm({ ...form, name: e.target.value, named: true })} />`}<//>
      <label class="check"><input type="checkbox" checked=${form.here} onChange=${(e) => setForm({ ...form, here: e.target.checked })} />
        Only for the collection ${collection}</label>
      <${ErrorBox} error=${action.error && !placed ? action.error : null} />
      <footer class="dialog-foot"><button type="button" onClick=${onClose}>Cancel</button>
        <button type="submit" class="primary" disabled=${action.busy}>${action.busy ? "Saving…" : "Save view"}</button></footer>
    </form><//>`;
}

function RunMany({ schema, ids, onClose }) {
  const flows = useLoad((signal) => get("/workflows", {}, { signal }), []);
  const ofSchema = (flows.data || []).filter((w) => w.record_schema === schema);
  const mine = ofSchema.filter((w) => w.triggers && "manual" in w.triggers);
  const automatic = ofSchema.filter((w) => !mine.includes(w));
  const [chosen, setChosen] = useState("");
  const [result, setResult] = useState(null);
  const action = useAction(() => post(`/workflows/${seg(chosen || (mine[0] && mine[0].name))}/run-many`, { record_ids: ids }));
  return html`<${Modal} title="Run a workflow" onClose=${onClose}>
    <div class="dialog-body">
      ${flows.loading ? html`<${Loading} />` : null}
      <${ErrorBox} error=${flows.error} />
      ${flows.data && !mine.length ? html`<p>No workflow of ${schema} records can be run by hand (a <code>manual</code> trigger).
        <a href=${href("/automation")}>Automation</a></p>` : null}
      ${automatic.length ? html`<p class="muted">Not run by hand (no manual trigger): ${automatic.map((w) => w.name).join(", ")}.</p>` : null}
      ${mine.length ? html`<${Field} label="Workflow" hint=${ids.length === 1 ? "One run for the ticked record." : `One run for each of the ${formatCount(ids.length)} ticked records.`}>
        ${(id, d) => html`<select id=${id} aria-describedby=${d} value=${chosen || mine[0].name} onChange=${(e) => setChosen(e.target.value)}>
          ${mine.map((w) => html`<option value=${w.name}>${w.name}${w.valid ? "" : " (has problems)"}</option>`)}</select>`}<//>` : null}
      <${ErrorBox} error=${action.error} />
      ${result ? html`<div class="ok-box" role="status">Started ${counted(result.started, "run")}.
        ${result.skipped.length ? html`<ul>${result.skipped.map((s) => html`<li>${s.id}: ${s.reason}</li>`)}</ul>` : null}
        <a href=${href("/automation/runs")}>See the runs</a></div>` : null}
    </div>
    <footer class="dialog-foot"><button type="button" onClick=${onClose}>${result ? "Close" : "Cancel"}</button>
      ${!result && mine.length ? html`<button type="button" class="primary" disabled=${action.busy} onClick=${async () => {
        const r = await action.run();
        if (r) { setResult(r); pokeStatus(); notify(`Started ${counted(r.started, "run")}`, "ok"); }
      }}>${action.busy ? "Starting…" : "Run"}</button>` : null}</footer>
  <//>`;
}
