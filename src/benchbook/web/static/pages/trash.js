// Recently deleted (#/trash): deleted collections and schemas, and record deletions from the
// history (a bulk delete is one batch), each with its restore plan shown before restoring, and
// purge behind a confirmation. Records deleted one by one are restored through their own
// endpoint (with their parents when those are deleted too); a batch through restore-all.
import { html, useState } from "../lib/html.js";
import { get, post, del, enc } from "../lib/api.js";
import { href, seg } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, Confirm, notify, useTitle, formatTime, formatCount } from "../lib/ui.js";

const deletesOf = (kind) => ({ and: [{ field: "action", op: "eq", value: "delete" }, { field: "entity_type", op: "eq", value: kind }] });

function Plan({ plan }) {
  if (!plan) return null;
  const counts = Object.entries(plan).filter(([, v]) => typeof v === "number");
  const lists = Object.entries(plan).filter(([, v]) => Array.isArray(v) && v.length);
  return html`<div class="plan-box" role="status">
    <dl class="props plan">${counts.map(([k, v]) => html`<dt>${k.replace(/_/g, " ")}</dt><dd>${formatCount(v)}</dd>`)}</dl>
    ${lists.map(([k, v]) => html`<p><strong>${k.replace(/_/g, " ")}:</strong> ${v.map((x) => typeof x === "object" ? (x.natural_name || x.name || x.id || JSON.stringify(x)) : String(x)).join(", ")}</p>`)}
    ${plan.conflict || plan.blocked === true || (typeof plan.blocked === "string" && plan.blocked) ? html`<p class="error">Blocked: ${String(plan.blocked || plan.conflict)}</p>` : null}
  </div>`;
}

// One deleted thing: [Show what restoring brings back] → plan → [Restore]; [Purge…] behind a confirm.
function Item({ title, meta, planPath, onRestore, purgePath, reload, testid }) {
  const [plan, setPlan] = useState(null);
  const [purging, setPurging] = useState(false);
  const loadPlan = useAction(async () => setPlan(await get(planPath.path, planPath.query || {})));
  const restore = useAction(onRestore);
  return html`<li class="card trash-item" data-testid=${testid}>
    <div class="trash-head"><strong>${title}</strong> <span class="muted">${meta}</span></div>
    <div class="toolbar">
      ${plan ? null : html`<button type="button" onClick=${loadPlan.run} disabled=${loadPlan.busy}>Show what restoring brings back</button>`}
      ${plan ? html`<button type="button" class="primary" disabled=${restore.busy}
        onClick=${async () => { const r = await restore.run(); if (r !== undefined) { notify(`Restored ${title}`, "ok"); reload(); } }}>Restore</button>` : null}
      ${purgePath ? html`<button type="button" class="danger" onClick=${() => setPurging(true)}>Purge…</button>` : null}
    </div>
    <${Plan} plan=${plan} />
    <${ErrorBox} error=${loadPlan.error || restore.error} />
    ${purging ? html`<${Confirm} title=${`Purge ${title}?`} danger=${true} confirmLabel="Purge for good"
      message="Purging removes it for good: it cannot be restored afterwards. Its history stays."
      onClose=${() => setPurging(false)}
      onConfirm=${async () => { await del(purgePath); notify(`Purged ${title}`, "ok"); reload(); return true; }} />` : null}
  </li>`;
}

// The paths of a thing restored through its own endpoints (``<base>/restore-plan`` …).
const thing = (base) => ({ planPath: { path: base + "/restore-plan" }, purgePath: base + "/purge", onRestore: () => post(base + "/restore") });

// One section of the page: what `load` answers, each turned into an Item's props by `items`.
function Section({ id, title, intro, empty, load, items }) {
  const state = useLoad(load, []);
  const list = state.data ? items(state.data) : [];
  return html`<section aria-labelledby=${id}><h2 id=${id}>${title}</h2>
    ${intro ? html`<p class="muted">${intro}</p>` : null}
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${state.loading && !state.data ? html`<${Loading} />` : list.length
      ? html`<ul class="plain">${list.map((props) => html`<${Item} ...${props} reload=${state.reload} />`)}</ul>`
      : html`<p class="muted">${empty}</p>`}
  </section>`;
}

const deletes = (kind) => (signal) => get("/audit/events", { filter: deletesOf(kind), limit: 50 }, { signal });

// A record deletion from the history: a batch is restored with restore-all, one record on its own.
function recordItem(ev) {
  if (ev.kind === "batch") {
    return { key: ev.id, title: `${ev.count} records (${ev.batch.label || ev.batch.kind})`, meta: `deleted ${formatTime(ev.timestamp)}`,
      planPath: { path: "/audit/restore-all", query: { batch: ev.id } }, onRestore: () => post("/audit/restore-all", { batch: ev.id }),
      testid: "deleted-records" };
  }
  const e = ev.entry;
  return { key: ev.id, title: (e.old_data && (e.old_data.natural_name || e.old_data.name)) || `record ${e.entity_id.slice(-8)}`,
    meta: html`deleted ${formatTime(ev.timestamp)} · <a href=${href("/r/" + seg(e.entity_id))}>open</a>`,
    ...thing(`/records/${enc(e.entity_id)}`), testid: "deleted-record" };
}

// A field deletion from the history; one restored or purged since says so in its plan.
function fieldItem(ev) {
  const f = ev.entry.old_data;
  return { key: ev.id, title: `${f.schema_name} › ${f.label || f.name}`, meta: `${f.type} · deleted ${formatTime(ev.timestamp)}`,
    ...thing(`/schemas/${enc(f.schema_name)}/fields/${enc(f.id)}`), testid: "deleted-field" };
}

export default function Trash() {
  useTitle("Recently deleted");
  return html`<section class="page trash">
    <div class="page-head"><h1>Recently deleted</h1></div>
    <p class="muted">Deleting keeps everything: restore it here, after seeing what comes back. Purging removes it for good.</p>
    <${Section} id="trash-records" title="Records" empty="No deleted records." load=${deletes("record")}
      intro="Each deletion from the history, newest first: a bulk delete or a delete that took children with it is one line."
      items=${(d) => d.items.map(recordItem)} />
    <${Section} id="trash-fields" title="Fields" empty="No deleted fields." load=${deletes("field")}
      items=${(d) => d.items.filter((ev) => ev.kind === "entry" && ev.entry.old_data).map(fieldItem)} />
    <${Section} id="trash-collections" title="Collections" empty="No deleted collections."
      load=${(signal) => get("/collections/deleted", {}, { signal })}
      items=${(d) => d.map((c) => ({ key: c.id, title: c.name, testid: "deleted-collection",
        meta: `deleted ${formatTime(c.deleted_at)} · ${formatCount(c.record_count)} records`, ...thing(`/collections/${enc(c.id)}`) }))} />
    <${Section} id="trash-schemas" title="Schemas" empty="No deleted schemas." load=${(signal) => get("/schemas/deleted", {}, { signal })}
      items=${(d) => d.map((x) => ({ key: x.id, title: x.name, testid: "deleted-schema", meta: `deleted ${formatTime(x.deleted_at)}`,
        ...thing(`/schemas/${enc(x.id)}`) }))} />
  </section>`;
}
