// Recently deleted (#/trash): record deletions still in effect (GET /records/deleted: one line
// per deletion, naming its records and collections), deleted fields from the history, and
// deleted collections and schemas; each with its restore plan, in sentences (lib/plans.js), shown
// before restoring, and purge behind a confirmation. A deletion with a history batch (a bulk
// delete, or a delete that took children along) is restored through restore-all; a record
// deleted on its own through its own endpoint. A line restored or purged goes away.
import { html, useState } from "../lib/html.js";
import { get, post, del, enc } from "../lib/api.js";
import { href, seg } from "../lib/router.js";
import { PlanText } from "../lib/plans.js";
import { useLoad, useAction, Loading, ErrorBox, Confirm, notify, useTitle, formatTime, formatCount } from "../lib/ui.js";
import { counted, andList } from "../lib/counting.js";

const deletesOf = (kind) => ({ and: [{ field: "action", op: "eq", value: "delete" }, { field: "entity_type", op: "eq", value: kind }] });

// One deleted thing: [Show what restoring brings back] → plan → [Restore]; [Purge…] behind a
// confirm. `onPurge` (or a DELETE of `purgePath`) purges; `what` names it in the confirmation.
function Item({ title, meta, planPath, onRestore, purgePath, onPurge, what, many = false, reload, testid }) {
  const [plan, setPlan] = useState(null);
  const [purging, setPurging] = useState(false);
  const loadPlan = useAction(async () => setPlan(await get(planPath.path, planPath.query || {})));
  const restore = useAction(onRestore || (async () => undefined));
  const purge = onPurge || (purgePath ? () => del(purgePath) : null);
  return html`<li class="card trash-item" data-testid=${testid}>
    <div class="trash-head"><strong>${title}</strong> <span class="muted">${meta}</span></div>
    <div class="toolbar">
      ${plan || !planPath ? null : html`<button type="button" onClick=${loadPlan.run} disabled=${loadPlan.busy}>Show what restoring brings back</button>`}
      ${plan && onRestore ? html`<button type="button" class="primary" disabled=${restore.busy || plan.can_restore === false}
        onClick=${async () => { const r = await restore.run(); if (r !== undefined) { notify(`Restored ${what || title}`, "ok"); reload(); } }}>Restore</button>` : null}
      ${purge ? html`<button type="button" class="danger" onClick=${() => setPurging(true)}>Purge…</button>` : null}
    </div>
    <${PlanText} plan=${plan} />
    <${ErrorBox} error=${loadPlan.error || restore.error} />
    ${purging ? html`<${Confirm} title=${`Purge ${what || title}?`} danger=${true} confirmLabel="Purge for good"
      message=${many ? `Purging removes ${title} for good: they cannot be restored afterwards. Their history stays.`
        : "Purging removes it for good: it cannot be restored afterwards. Its history stays."}
      onClose=${() => setPurging(false)}
      onConfirm=${async () => { await purge(); notify(`Purged ${what || title}`, "ok"); reload(); return true; }} />` : null}
  </li>`;
}

// The paths of a thing restored through its own endpoints (``<base>/restore-plan`` …).
const thing = (base) => ({ planPath: { path: base + "/restore-plan" }, purgePath: base + "/purge", onRestore: () => post(base + "/restore") });

// One section of the page: what `load` answers, each turned into an Item's props by `items`;
// `more` (optional) adds paging under the list.
function Section({ id, title, intro, empty, load, items, deps = [], more }) {
  const state = useLoad(load, deps);
  const list = state.data ? items(state.data) : [];
  return html`<section aria-labelledby=${id}><h2 id=${id}>${title}</h2>
    ${intro ? html`<p class="muted">${intro}</p>` : null}
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${state.loading && !state.data ? html`<${Loading} />` : list.length
      ? html`<ul class="plain">${list.map((props) => html`<${Item} ...${props} reload=${state.reload} />`)}</ul>`
      : html`<p class="muted">${empty}</p>`}
    ${more && state.data ? more(state.data) : null}
  </section>`;
}

const deletes = (kind) => (signal) => get("/audit/events", { filter: deletesOf(kind), limit: 50 }, { signal });

// What a deletion's records are called: their schema's name when they share one ("vial"), else "record".
const nounOf = (d) => (d.schemas.length === 1 ? d.schemas[0].replace(/_/g, " ") : "record");
// "V-1, V-2, V-3 and 4 more vials": the first few records' names and how many more.
const SHOWN = 3;
function deletionNames(d) {
  const noun = nounOf(d);
  const names = d.examples.slice(0, SHOWN).map((x) => x.natural_name || `${x.schema_name} ${x.id.slice(-8)}`);
  const rest = d.count - names.length;
  return rest > 0 ? `${names.join(", ")} and ${counted(rest, `more ${noun}`)}` : andList(names);
}

// A record deletion still in effect (GET /records/deleted): one with a history batch comes back
// through restore-all, a record deleted on its own through its own endpoint; purge takes what
// is left of it. (A deletion of several records always has a batch: a delete without one is of
// a single record.)
function recordItem(d) {
  const noun = nounOf(d);
  const where = `in the ${d.collections.length === 1 ? "collection" : "collections"} ${andList(d.collections)}`;
  const what = d.count === 1 ? `${noun} ${deletionNames(d)}` : counted(d.count, noun);
  const meta = d.record_id
    ? html`${noun} ${where} · deleted ${formatTime(d.deleted_at)} · <a href=${href("/r/" + seg(d.record_id))}>open</a>`
    : `${counted(d.count, noun)} ${where} · deleted ${formatTime(d.deleted_at)}`;
  const restoreVia = d.batch_id
    ? { planPath: { path: "/audit/restore-all", query: { batch: d.batch_id } }, onRestore: () => post("/audit/restore-all", { batch: d.batch_id }) }
    : d.record_id
      ? { planPath: { path: `/records/${enc(d.record_id)}/restore-plan` }, onRestore: () => post(`/records/${enc(d.record_id)}/restore`) }
      : {};
  return { key: d.op, title: deletionNames(d), meta, what, many: d.count > 1, ...restoreVia,
    onPurge: () => post("/records/deleted/purge", { op: d.op }),
    testid: d.count === 1 ? "deleted-record" : "deleted-records" };
}

// A field deletion from the history; one restored or purged since says so in its plan.
function fieldItem(ev) {
  const f = ev.entry.old_data;
  return { key: ev.id, title: `${f.schema_name} › ${f.label || f.name}`, meta: `${f.type} · deleted ${formatTime(ev.timestamp)}`,
    ...thing(`/schemas/${enc(f.schema_name)}/fields/${enc(f.id)}`), testid: "deleted-field" };
}

// The Records section: GET /records/deleted, a page of deletions at a time (newest first).
const PAGE = 50;
function RecordDeletions() {
  const [offset, setOffset] = useState(0);
  return html`<${Section} id="trash-records" title="Records" empty="No deleted records." deps=${[offset]}
    intro="Each deletion still in effect, newest first: a bulk delete, or a delete that took the records below along, is one line."
    load=${(signal) => get("/records/deleted", { limit: PAGE, offset }, { signal })}
    items=${(d) => d.items.map(recordItem)}
    more=${(d) => offset > 0 || d.total > PAGE ? html`<div class="pager">
      <button type="button" disabled=${offset === 0} onClick=${() => setOffset(Math.max(0, offset - PAGE))}>Newer</button>
      <span class="muted">${formatCount(offset + 1)}–${formatCount(offset + d.items.length)} of ${counted(d.total, "deletion")}</span>
      <button type="button" disabled=${offset + PAGE >= d.total} onClick=${() => setOffset(offset + PAGE)}>Older</button>
    </div>` : null} />`;
}

export default function Trash() {
  useTitle("Recently deleted");
  return html`<section class="page trash">
    <div class="page-head"><h1>Recently deleted</h1></div>
    <p class="muted">Deleting keeps everything: restore it here, after seeing what comes back. Purging removes it for good.</p>
    <${RecordDeletions} />
    <${Section} id="trash-fields" title="Fields" empty="No deleted fields." load=${deletes("field")}
      items=${(d) => d.items.filter((ev) => ev.kind === "entry" && ev.entry.old_data).map(fieldItem)} />
    <${Section} id="trash-collections" title="Collections" empty="No deleted collections."
      load=${(signal) => get("/collections/deleted", {}, { signal })}
      items=${(d) => d.map((c) => ({ key: c.id, title: c.name, testid: "deleted-collection",
        meta: `deleted ${formatTime(c.deleted_at)} · ${counted(c.record_count, "record")}`, ...thing(`/collections/${enc(c.id)}`) }))} />
    <${Section} id="trash-schemas" title="Schemas" empty="No deleted schemas." load=${(signal) => get("/schemas/deleted", {}, { signal })}
      items=${(d) => d.map((x) => ({ key: x.id, title: x.name, testid: "deleted-schema", meta: `deleted ${formatTime(x.deleted_at)}`,
        ...thing(`/schemas/${enc(x.id)}`) }))} />
  </section>`;
}
