// History storage and restore-all (#/history/storage): the database's size and free room, edits
// still stored whole and the conversion's progress; reclaim the free room (behind a
// confirmation); restore everything deleted, or what a text search picks, after its plan.
import { html, useState } from "../lib/html.js";
import { get, post } from "../lib/api.js";
import { useLoad, useAction, Loading, ErrorBox, Confirm, Field, notify, useTitle, formatBytes, formatCount } from "../lib/ui.js";
import { counted } from "../lib/counting.js";

function RestoreAll() {
  const [q, setQ] = useState("");
  const [plan, setPlan] = useState(null);
  const load = useAction(async () => setPlan(await get("/audit/restore-all", { q: q || undefined })));
  const apply = useAction(() => post("/audit/restore-all", { q: q || null }));
  return html`<section aria-labelledby="restore-all-h" class="card"><h2 id="restore-all-h">Restore everything deleted</h2>
    <form onSubmit=${(e) => { e.preventDefault(); load.run(); }}>
      <${Field} label="Only deletes whose stored values contain (optional)">${(id) => html`<input id=${id} value=${q}
        onInput=${(e) => { setQ(e.target.value); setPlan(null); }} />`}<//>
      <button type="submit">Show the plan</button>
    </form>
    <${ErrorBox} error=${load.error || apply.error} />
    ${plan ? html`<dl class="props" aria-label="restore-all plan">
        <dt>Collections</dt><dd>${formatCount(plan.collections)}</dd><dt>Schemas</dt><dd>${formatCount(plan.schemas)}</dd>
        <dt>Fields</dt><dd>${formatCount(plan.fields || 0)}</dd><dt>Records</dt><dd>${formatCount(plan.records)}</dd>
        <dt>Live afterwards</dt><dd>${formatCount(plan.restores)}</dd><dt>Blocked</dt><dd>${formatCount(plan.blocked)}</dd></dl>
      ${plan.truncated ? html`<p class="warn-box">More matched than were looked at: run it again afterwards.</p>` : null}
      <button type="button" class="primary" disabled=${apply.busy || !plan.things} onClick=${async () => {
        const r = await apply.run(); if (r) { notify(`Restored ${counted(r.restored, "thing")} (${formatCount(r.blocked)} blocked)`, "ok"); setPlan(null); } }}>Restore them</button>` : null}
  </section>`;
}

export default function Storage() {
  useTitle("History storage");
  const state = useLoad((signal) => get("/audit/storage", {}, { signal }), []);
  const [asking, setAsking] = useState(false);
  const s = state.data;
  return html`<section class="page storage">
    <div class="page-head"><h1>History storage</h1></div>
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${s ? html`<dl class="props" aria-label="storage figures">
        <dt>Database file</dt><dd>${s.size_bytes === null ? "— (PostgreSQL)" : formatBytes(s.size_bytes)}</dd>
        <dt>Free room inside it</dt><dd>${s.free_bytes === null ? "—" : formatBytes(s.free_bytes)}</dd>
        <dt>Edits still stored whole</dt><dd>${formatCount(s.whole_entries)}</dd>
        <dt>Conversion</dt><dd>${s.converting ? `converting: ${formatCount(s.done)} of ${formatCount(s.total)}` : "nothing to convert"}</dd></dl>
      <button type="button" onClick=${() => setAsking(true)} disabled=${s.converting}>Reclaim free room…</button>
      ${asking ? html`<${Confirm} title="Reclaim the free room?" confirmLabel="Reclaim"
        message="The database file is rewritten without its free room (SQLite VACUUM). Writes wait while it runs."
        onClose=${() => setAsking(false)} onConfirm=${async () => { const r = await post("/audit/storage/reclaim");
          state.setData(r); notify("Reclaimed", "ok"); return true; }} />` : null}` : html`<${Loading} />`}
    <${RestoreAll} />
  </section>`;
}
