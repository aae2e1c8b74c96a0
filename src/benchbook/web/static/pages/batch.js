// One batch (#/history/batch/<id>): what it was (import, bulk delete, workflow run…), its
// entries page by page with their changes, and "restore what it deleted" for a delete batch.
import { html } from "../lib/html.js";
import { get, post, enc } from "../lib/api.js";
import { href, navigate, seg } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, notify, useTitle, formatTime, formatCount } from "../lib/ui.js";
import { counted } from "../lib/counting.js";
import { EntryLine } from "../lib/entries.js";
import { partsWords } from "../lib/history-words.js";

const PAGE = 50;

export default function Batch({ params, query }) {
  const id = params.batch;
  const page = Math.max(1, parseInt(query.page, 10) || 1);
  const batch = useLoad((signal) => get(`/audit/batches/${enc(id)}`, {}, { signal }), [id]);
  const entries = useLoad((signal) => get(`/audit/batches/${enc(id)}/entries`, { limit: PAGE, offset: (page - 1) * PAGE }, { signal }), [id, page]);
  const plan = useLoad((signal) => get("/audit/restore-all", { batch: id }, { signal }), [id]);
  const restore = useAction(() => post("/audit/restore-all", { batch: id }));
  useTitle("History batch");
  const ev = batch.data;  // the batch as one history event: {count, parts, batch: {kind, label, created_at}}
  const b = ev && ev.batch;
  const e = entries.data;
  const pages = e ? Math.max(1, Math.ceil(e.total / PAGE)) : 1;
  return html`<section class="page batch-page">
    <p><a href=${href("/history")}>← History</a></p>
    <${ErrorBox} error=${batch.error} onRetry=${batch.reload} />
    ${b ? html`<div class="page-head"><h1><span class="badge">${b.kind}</span> ${b.label || "batch"}</h1>
      <span class="muted">${formatTime(b.created_at)} · ${partsWords(ev.parts)}</span></div>` : html`<${Loading} />`}
    ${plan.data && plan.data.things > 0 ? html`<div class="card"><p>What this batch deleted is still deleted (${counted(plan.data.things, "deletion")}).
      Restoring it brings back ${counted(plan.data.restores, "record")}${plan.data.blocked
        ? `; ${formatCount(plan.data.blocked)} cannot come back (what held them is gone)` : ""}.</p>
      <button type="button" class="primary" disabled=${restore.busy} onClick=${async () => {
        const r = await restore.run(); if (r) { notify(`Restored ${counted(r.restored, "thing")}`, "ok"); plan.reload(); entries.reload(); } }}>Restore what this batch deleted</button>
      <${ErrorBox} error=${restore.error} /></div>` : null}
    <${ErrorBox} error=${entries.error} onRetry=${entries.reload} />
    ${e ? html`<div class="entries">${(e.items || []).map((x) => html`<${EntryLine} key=${x.id} entry=${x} />`)}</div>
      <nav class="pager" aria-label="pages of the batch">
        <button type="button" disabled=${page <= 1} onClick=${() => navigate("/history/batch/" + seg(id), { page: page - 1 })}>Previous</button>
        <span>Page ${formatCount(page)} of ${formatCount(pages)}</span>
        <button type="button" disabled=${page >= pages} onClick=${() => navigate("/history/batch/" + seg(id), { page: page + 1 })}>Next</button>
      </nav>` : html`<${Loading} />`}
  </section>`;
}
