// The history as events (#/history): one line per event, a batch one line that says what it did
// ("penguin-tag: 344 records updated") and opens to its entries, runs of one workflow that follow
// each other folded into one line however many there are (a page is LINES lines, reading on until
// its last fold of runs ends, at most MAX_READ events; an open fold lists its runs RUNS_SHOWN at a
// time); filters (action, kind of thing, workflow runs shown or hidden, collection, schema, record,
// time) and `q` in the hash query; paging by the event a page starts at (`from`, with the starts of
// the newer pages in `back`). `?schema=<name>` and `?record=<id>` show one schema's or record's history.
import { html, useState } from "../lib/html.js";
import { get } from "../lib/api.js";
import { href, navigate, seg } from "../lib/router.js";
import { useLoad, Loading, ErrorBox, Field, useTitle, formatTime, formatCount } from "../lib/ui.js";
import { counted } from "../lib/counting.js";
import { EntryLine } from "../lib/entries.js";
import { addParts, partsWords, storyPage } from "../lib/history-words.js";

const LINES = 25;
const READ = 100;
const MAX_READ = 2000;
const RUNS_SHOWN = 25;
const ACTIONS = ["create", "update", "delete", "restore", "purge"];
const KINDS = ["record", "schema", "field", "dataset", "view"];

// The filter tree for the query's choices (fields from GET /audit/filter-fields).
export function historyTree(query) {
  const leaves = [];
  if (query.action) leaves.push({ field: "action", op: "eq", value: query.action });
  if (query.kind) leaves.push({ field: "entity_type", op: "eq", value: query.kind });
  if (query.collection) leaves.push({ field: "collection", op: "eq", value: query.collection });
  if (query.schema) leaves.push({ field: "schema", op: "eq", value: query.schema });
  if (query.record) leaves.push({ field: "entity_id", op: "eq", value: query.record });
  if (query.since) leaves.push({ field: "timestamp", op: "gte", value: query.since });
  if (query.until) leaves.push({ field: "timestamp", op: "lte", value: query.until });
  if (query.runs === "hidden") leaves.push({ field: "batch_kind", op: "ne", value: "workflow" });
  return leaves.length ? { and: leaves } : null;
}

function BatchEntries({ batch }) {
  const state = useLoad((signal) => get(`/audit/batches/${seg(batch.id)}/entries`, { limit: 50 }, { signal }), [batch.id]);
  const items = state.data ? state.data.items || state.data : [];
  return html`<div class="batch-entries">
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${state.loading && !state.data ? html`<${Loading} />` : items.map((e) => html`<${EntryLine} key=${e.id} entry=${e} />`)}
    ${state.data && state.data.total > items.length ? html`<p><a href=${href("/history/batch/" + seg(batch.id))}>
      All ${formatCount(state.data.total)} entries of this batch</a></p>` : null}
  </div>`;
}

const BATCH_WORDS = { workflow: "workflow run", import: "import", sync: "sync", revert: "revert", restore: "restore" };

function EventLine({ event }) {
  const [open, setOpen] = useState(false);
  if (event.kind === "entry") return html`<li><${EntryLine} entry=${event.entry} /></li>`;
  const kind = BATCH_WORDS[event.batch.kind] || event.batch.kind;
  return html`<li><details class="card event batch" data-testid="batch-event" onToggle=${(e) => setOpen(e.currentTarget.open)}>
    <summary><span class="badge">${kind}</span>${" "}<strong>${event.batch.label || ""}</strong>${event.batch.label ? ": " : ""}${partsWords(event.parts)}
      ${" "}· <time datetime=${event.timestamp}>${formatTime(event.timestamp)}</time>${event.actor ? ` · ${event.actor}` : ""}</summary>
    <p><a href=${href("/history/batch/" + seg(event.id))}>Open this batch</a></p>
    ${open ? html`<${BatchEntries} batch=${event.batch} />` : null}
  </details></li>`;
}

// Runs of one workflow that follow each other: one line ("penguin-tag ran 25 times: 25 records
// updated"), opening to the runs.
function FoldedRuns({ fold }) {
  const [shown, setShown] = useState(RUNS_SHOWN);
  const first = fold.events[fold.events.length - 1];
  const last = fold.events[0];
  const left = fold.events.length - shown;
  return html`<li><details class="card event runs-fold" data-testid="runs-fold">
    <summary><span class="badge">workflow runs</span>${" "}<strong>${fold.label}</strong> ran ${counted(fold.events.length, "time")}:${" "}
      ${partsWords(addParts(fold.events))} · <time datetime=${first.timestamp}>${formatTime(first.timestamp)}</time>
      ${" "}to <time datetime=${last.timestamp}>${formatTime(last.timestamp)}</time></summary>
    <ul class="plain events">${fold.events.slice(0, shown).map((ev) => html`<${EventLine} key=${ev.id} event=${ev} />`)}</ul>
    ${left > 0 ? html`<button type="button" onClick=${() => setShown(shown + RUNS_SHOWN)}>
      Show ${counted(Math.min(left, RUNS_SHOWN), "more run")} (${formatCount(left)} not shown)</button>` : null}
  </details></li>`;
}

function Filters({ query }) {
  const [q, setQ] = useState(query.q || "");
  const set = (changes) => navigate("/history", { ...query, ...changes, from: undefined, back: undefined });
  return html`<form class="history-filters" role="search" aria-label="Filter the history"
      onSubmit=${(e) => { e.preventDefault(); set({ q: q || undefined }); }}>
    <div class="form-row">
      <${Field} label="Find text in the changes">${(id) => html`<input id=${id} type="search" data-search value=${q}
        onInput=${(e) => setQ(e.target.value)} placeholder="a value, a name, a batch label" />`}<//>
      <${Field} label="Action">${(id) => html`<select id=${id} value=${query.action || ""} onChange=${(e) => set({ action: e.target.value || undefined })}>
        <option value="">any</option>${ACTIONS.map((a) => html`<option value=${a}>${a}</option>`)}</select>`}<//>
      <${Field} label="Kind of thing">${(id) => html`<select id=${id} value=${query.kind || ""} onChange=${(e) => set({ kind: e.target.value || undefined })}>
        <option value="">any</option>${KINDS.map((k) => html`<option value=${k}>${k === "dataset" ? "collection" : k}</option>`)}</select>`}<//>
      <${Field} label="Workflow runs">${(id) => html`<select id=${id} value=${query.runs || ""} onChange=${(e) => set({ runs: e.target.value || undefined })}>
        <option value="">shown</option><option value="hidden">hidden</option></select>`}<//>
      <${Field} label="Since">${(id) => html`<input id=${id} type="date" value=${query.since || ""} onChange=${(e) => set({ since: e.target.value || undefined })} />`}<//>
    </div>
    <div class="toolbar"><button type="submit" class="primary">Search the history</button>
      ${["schema", "record", "collection"].filter((k) => query[k]).map((k) => html`<span class="chip">${k}: ${query[k]}
        <button type="button" aria-label=${"remove the " + k + " filter"} onClick=${() => set({ [k]: undefined })}>×</button></span>`)}
      <a href=${href("/history/storage")}>Storage and restore-all</a></div>
  </form>`;
}

// A page of the history from the event at `from`: events read READ at a time until the page's
// LINES story lines are known whole (or MAX_READ were read). {items, used, total}.
async function readPage(params, from, signal) {
  const events = [];
  for (;;) {
    const got = await get("/audit/events", { ...params, limit: READ, offset: from + events.length }, { signal });
    events.push(...got.items);
    const last = got.items.length < READ || from + events.length >= got.total || events.length >= MAX_READ;
    const page = storyPage(events, LINES, last);
    if (page) return { ...page, total: got.total };
  }
}

export default function History({ query }) {
  useTitle("History");
  const from = Math.max(0, parseInt(query.from, 10) || 0);
  const back = (query.back || "").split(",").filter((x) => /^\d+$/.test(x));
  const tree = historyTree(query);
  const state = useLoad((signal) => readPage({ filter: tree || undefined, q: query.q || undefined }, from, signal),
    [JSON.stringify(query)]);
  const data = state.data;
  const to = data ? from + data.used : from;
  const go = (start, trail) => navigate("/history", { ...query, from: start || undefined,
    back: trail.length ? trail.slice(-50).join(",") : undefined, page: undefined });
  const heading = query.record ? "History of a record" : query.schema ? `History of schema ${query.schema}` : "History";
  return html`<section class="page history">
    <div class="page-head"><h1>${heading}</h1>${data ? html`<span class="muted">${counted(data.total, "event")}</span>` : null}</div>
    <${Filters} key=${query.q || ""} query=${query} />
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${state.loading && !data ? html`<${Loading} />` : null}
    ${data ? html`<ul class="plain events" aria-label="events">${data.items.map((it) => it.fold
      ? html`<${FoldedRuns} key=${it.fold.events[0].id} fold=${it.fold} />` : html`<${EventLine} key=${it.event.id} event=${it.event} />`)}</ul>
      ${!data.items.length ? html`<p class="muted">No change matches.</p>` : null}
      <nav class="pager" aria-label="pages of the history">
        <button type="button" disabled=${from === 0} onClick=${() => go(0, [])}>Newest</button>
        <button type="button" disabled=${from === 0} onClick=${() => go(back.length ? Number(back[back.length - 1]) : 0, back.slice(0, -1))}>Newer</button>
        <span>${data.items.length ? `Events ${formatCount(from + 1)}–${formatCount(to)} of ${formatCount(data.total)}` : ""}</span>
        <button type="button" disabled=${to >= data.total} onClick=${() => go(to, [...back, String(from)])}>Older</button>
      </nav>` : null}
  </section>`;
}
