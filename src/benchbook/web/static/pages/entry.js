// One history entry (#/history/entry/<id>): what changed, field by field, and revert: the plan
// first (each field's status: revert, unchanged, conflict, cannot), then apply; conflicts are
// left alone unless "also overwrite later edits" is ticked (`force`). An edit of several fields
// has a tick per field: only the ticked ones are put back (the API's `fields`).
import { html, useState } from "../lib/html.js";
import { get, post, enc } from "../lib/api.js";
import { href, seg } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, notify, useTitle, formatTime } from "../lib/ui.js";
import { Changes, subjectOf, valueText } from "../lib/entries.js";

const LINKS = { record: (id) => "/r/" + seg(id), schema: (id) => "/schemas/" + seg(id), dataset: (id) => "/c/" + seg(id) };

function RevertPlan({ entry, onDone }) {
  const [force, setForce] = useState(false);
  const [unticked, setUnticked] = useState(() => new Set());  // fields the user leaves as they are
  const plan = useLoad((signal) => get(`/audit/${enc(entry.id)}/revert`, {}, { signal }), [entry.id]);
  const p = plan.data;
  const tickable = (f) => f.status === "revert" || f.status === "conflict";
  const rows = (p && p.fields) || [];
  const picked = rows.filter((f) => tickable(f) && !unticked.has(f.field)).map((f) => f.field);
  const choosing = p && p.kind === "update" && rows.filter(tickable).length > 1;
  const apply = useAction(() => post(`/audit/${enc(entry.id)}/revert`,
    { ...(force ? { force: true } : {}), ...(choosing && unticked.size ? { fields: picked } : {}) }));
  const toggle = (name, on) => setUnticked((old) => { const next = new Set(old); if (on) next.delete(name); else next.add(name); return next; });
  const canApply = p && p.can_apply && (!choosing || rows.some((f) => picked.includes(f.field) && (f.status === "revert" || force)));
  return html`<section aria-labelledby="revert-h" class="card revert">
    <h2 id="revert-h">Revert this change</h2>
    <${ErrorBox} error=${plan.error} onRetry=${plan.reload} />
    ${plan.loading && !p ? html`<${Loading} label="Working out the plan…" />` : null}
    ${p ? html`
      <p>${p.kind === "update" ? (choosing ? "The ticked fields are put back (untick the ones to keep as they are):" : "The changed fields are put back:") : p.kind === "delete" ? "Reverting deletes what this entry made."
        : p.kind === "restore" ? "Reverting restores what this entry deleted." : "This entry cannot be reverted."}</p>
      ${p.blocked ? html`<p class="error" role="alert">Blocked: ${p.blocked}${p.blocker ? ` (restore ${p.blocker.name || p.blocker.id || JSON.stringify(p.blocker)} first)` : ""}</p>` : null}
      ${(p.fields || []).length ? html`<div class="table-wrap"><table class="grid" aria-label="revert plan">
        <thead><tr>${choosing ? html`<th scope="col">Put back</th>` : null}<th scope="col">Field</th><th scope="col">Now</th><th scope="col">Back to</th><th scope="col">Status</th></tr></thead>
        <tbody>${p.fields.map((f) => html`<tr data-status=${f.status}>${choosing ? html`<td>${tickable(f)
            ? html`<input type="checkbox" aria-label=${`Put back ${f.label || f.field}`} checked=${!unticked.has(f.field)}
                onChange=${(e) => toggle(f.field, e.target.checked)} />` : null}</td>` : null}<td>${f.label || f.field}</td>
          <td>${valueText(f.current, f.dtype, entry.value_labels)}</td><td>${valueText(f.target, f.dtype, entry.value_labels)}</td>
          <td><span class=${"badge " + (f.status === "conflict" || f.status === "cannot" ? "failed" : f.status === "revert" ? "succeeded" : "")}>${f.status}</span>
            ${f.reason ? html` <span class="muted">${f.reason}</span>` : null}</td></tr>`)}</tbody></table></div>` : null}
      ${p.has_conflicts ? html`<label class="check"><input type="checkbox" checked=${force} onChange=${(e) => setForce(e.target.checked)} />
        Also overwrite the fields edited since (conflicts)</label>` : null}
      <div class="toolbar"><button type="button" class="primary" disabled=${!canApply || apply.busy}
        onClick=${async () => { const r = await apply.run(); if (r) { notify(`Reverted: ${r.applied.length ? r.applied.map((n) => (rows.find((f) => f.field === n) || {}).label || n).join(", ") : r.kind}`, "ok"); onDone(r); } }}>
        ${apply.busy ? "Reverting…" : "Revert"}</button></div>
      <${ErrorBox} error=${apply.error} />` : null}
  </section>`;
}

export default function Entry({ params }) {
  const id = params.entry;
  const state = useLoad((signal) => get(`/audit/${enc(id)}`, {}, { signal }), [id]);
  const [result, setResult] = useState(null);
  useTitle("History entry");
  if (state.loading && !state.data) return html`<${Loading} />`;
  if (state.error) return html`<section class="page"><h1>History entry</h1><${ErrorBox} error=${state.error} onRetry=${state.reload} /></section>`;
  const e = state.data;
  const link = LINKS[e.entity_type];
  return html`<section class="page entry-page">
    <p><a href=${href("/history")}>← History</a></p>
    <div class="page-head"><h1><span class=${"badge " + e.action}>${e.action}</span> ${e.entity_type === "dataset" ? "collection" : e.entity_type}</h1></div>
    <dl class="props">
      <dt>When</dt><dd><time datetime=${e.timestamp}>${formatTime(e.timestamp)}</time></dd>
      <dt>Who</dt><dd>${e.actor || "—"}</dd>
      <dt>What</dt><dd>${link ? html`<a href=${href(link(e.entity_id))}>${subjectOf(e)}</a>` : subjectOf(e)}</dd>
      ${e.batch_id ? html`<dt>Batch</dt><dd><a href=${href("/history/batch/" + seg(e.batch_id))}>${e.batch_id}</a></dd>` : null}
    </dl>
    <h2>Changes</h2>
    <${Changes} entry=${e} />
    ${result ? html`<div class="ok-box" role="status">Reverted (${result.kind}). The revert is in the history too:${" "}<a href=${href("/history/entry/" + seg(result.audit_id))}>open it</a> to undo it.</div>`
      : html`<${RevertPlan} entry=${e} onDone=${setResult} />`}
  </section>`;
}
