// Recently deleted (#/trash): deleted collections and schemas, and record deletions from the
// history (a bulk delete is one batch), each with its restore plan shown before restoring, and
// purge behind a confirmation. Records deleted one by one are restored through their own
// endpoint (with their parents when those are deleted too); a batch through restore-all.
import { html, useState } from "../lib/html.js";
import { get, post, del, enc } from "../lib/api.js";
import { href, seg } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, Confirm, notify, useTitle, formatTime, formatCount } from "../lib/ui.js";

const deletesOf = (kind) => ({ and: [{ field: "action", op: "eq", value: "delete" }, { field: "entity_type", op: "eq", value: kind }] });
const RECORD_DELETES = deletesOf("record");

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

function Collections() {
  const state = useLoad((signal) => get("/collections/deleted", {}, { signal }), []);
  return html`<section aria-labelledby="trash-collections"><h2 id="trash-collections">Collections</h2>
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${state.loading && !state.data ? html`<${Loading} />` : (state.data || []).length ? html`<ul class="plain">
      ${state.data.map((c) => html`<${Item} key=${c.id} title=${c.name} meta=${`deleted ${formatTime(c.deleted_at)} · ${formatCount(c.record_count)} records`}
        planPath=${{ path: `/collections/${enc(c.id)}/restore-plan` }} purgePath=${`/collections/${enc(c.id)}/purge`}
        onRestore=${() => post(`/collections/${enc(c.id)}/restore`)} reload=${state.reload} testid="deleted-collection" />`)}</ul>`
      : html`<p class="muted">No deleted collections.</p>`}
  </section>`;
}

function Schemas() {
  const state = useLoad((signal) => get("/schemas/deleted", {}, { signal }), []);
  return html`<section aria-labelledby="trash-schemas"><h2 id="trash-schemas">Schemas</h2>
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${state.loading && !state.data ? html`<${Loading} />` : (state.data || []).length ? html`<ul class="plain">
      ${state.data.map((s) => html`<${Item} key=${s.id} title=${s.name} meta=${`deleted ${formatTime(s.deleted_at)}`}
        planPath=${{ path: `/schemas/${enc(s.id)}/restore-plan` }} purgePath=${`/schemas/${enc(s.id)}/purge`}
        onRestore=${() => post(`/schemas/${enc(s.id)}/restore`)} reload=${state.reload} testid="deleted-schema" />`)}</ul>`
      : html`<p class="muted">No deleted schemas.</p>`}
  </section>`;
}

function Records() {
  const state = useLoad((signal) => get("/audit/events", { filter: RECORD_DELETES, limit: 50 }, { signal }), []);
  const items = state.data ? state.data.items : [];
  return html`<section aria-labelledby="trash-records"><h2 id="trash-records">Records</h2>
    <p class="muted">Each deletion from the history, newest first: a bulk delete or a delete that took children with it is one line.</p>
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${state.loading && !state.data ? html`<${Loading} />` : items.length ? html`<ul class="plain">
      ${items.map((ev) => ev.kind === "batch"
        ? html`<${Item} key=${ev.id} title=${`${ev.count} records (${ev.batch.label || ev.batch.kind})`}
            meta=${`deleted ${formatTime(ev.timestamp)}`} planPath=${{ path: "/audit/restore-all", query: { batch: ev.id } }}
            onRestore=${() => post("/audit/restore-all", { batch: ev.id })} reload=${state.reload} testid="deleted-records" />`
        : html`<${Item} key=${ev.id} title=${(ev.entry.old_data && (ev.entry.old_data.natural_name || ev.entry.old_data.name)) || `record ${ev.entry.entity_id.slice(-8)}`}
            meta=${html`deleted ${formatTime(ev.timestamp)} · <a href=${href("/r/" + seg(ev.entry.entity_id))}>open</a>`}
            planPath=${{ path: `/records/${enc(ev.entry.entity_id)}/restore-plan` }} purgePath=${`/records/${enc(ev.entry.entity_id)}/purge`}
            onRestore=${() => post(`/records/${enc(ev.entry.entity_id)}/restore`)} reload=${state.reload} testid="deleted-record" />`)}
    </ul>` : html`<p class="muted">No deleted records.</p>`}
  </section>`;
}

// Deleted fields come from the history's field deletes; one restored or purged since says so in
// its plan (the plan of a live field is refused, and is shown as such).
function Fields() {
  const state = useLoad((signal) => get("/audit/events", { filter: deletesOf("field"), limit: 50 }, { signal }), []);
  const items = state.data ? state.data.items.filter((ev) => ev.kind === "entry" && ev.entry.old_data) : [];
  return html`<section aria-labelledby="trash-fields"><h2 id="trash-fields">Fields</h2>
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${state.loading && !state.data ? html`<${Loading} />` : items.length ? html`<ul class="plain">
      ${items.map((ev) => { const f = ev.entry.old_data; const base = `/schemas/${enc(f.schema_name)}/fields/${enc(f.id)}`;
        return html`<${Item} key=${ev.id} title=${`${f.schema_name} › ${f.label || f.name}`} meta=${`${f.type} · deleted ${formatTime(ev.timestamp)}`}
          planPath=${{ path: base + "/restore-plan" }} purgePath=${base + "/purge"} onRestore=${() => post(base + "/restore")}
          reload=${state.reload} testid="deleted-field" />`; })}</ul>` : html`<p class="muted">No deleted fields.</p>`}
  </section>`;
}

export default function Trash() {
  useTitle("Recently deleted");
  return html`<section class="page trash">
    <div class="page-head"><h1>Recently deleted</h1></div>
    <p class="muted">Deleting keeps everything: restore it here, after seeing what comes back. Purging removes it for good.</p>
    <${Records} /><${Fields} /><${Collections} /><${Schemas} />
  </section>`;
}
