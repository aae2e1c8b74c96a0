// Runs (#/automation/runs?status=&workflow=&trigger=&search=&page=): the run list with its
// filters in the hash, paging, ticked runs rerun or deleted, rerun of every run the filters
// match, cancel of a waiting or running run.
import { html, useState } from "../lib/html.js";
import { get, post, enc } from "../lib/api.js";
import { href, navigate, seg } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, Field, Confirm, notify, useTitle, formatTime, formatCount } from "../lib/ui.js";
import { StatusBadge } from "../lib/automation-common.js";
import { counted } from "../lib/counting.js";
import { pokeStatus } from "../lib/status.js";

const PAGE = 50;
const STATUSES = ["pending", "running", "completed", "failed", "cancelled"];
const TRIGGERS = ["record_created", "record_updated", "manual"];

// The filter tree the list's filters make (fields from GET /jobs/filter-fields), for rerun/delete by filter.
function jobTree(query) {
  const leaves = [];
  if (query.status) leaves.push({ field: "status", op: "eq", value: query.status });
  if (query.workflow) leaves.push({ field: "workflow_name", op: "eq", value: query.workflow });
  if (query.trigger) leaves.push({ field: "trigger", op: "eq", value: query.trigger });
  return leaves.length ? { and: leaves } : null;
}

export default function Runs({ query }) {
  useTitle("Runs");
  const page = Math.max(1, parseInt(query.page, 10) || 1);
  const params = { status: query.status, workflow: query.workflow, trigger: query.trigger, search: query.search };
  const runs = useLoad((signal) => Promise.all([
    get("/jobs", { ...params, limit: PAGE, offset: (page - 1) * PAGE }, { signal }),
    get("/jobs/count", params, { signal })]), [JSON.stringify(query)]);
  const workflows = useLoad((signal) => get("/workflows", {}, { signal }), []);
  const [ticked, setTicked] = useState(new Set());
  const [asking, setAsking] = useState(null);
  const [search, setSearch] = useState(query.search || "");
  const set = (changes) => { setTicked(new Set()); navigate("/automation/runs", { ...query, ...changes, page: undefined }); };
  const act = useAction(async (kind, body) => {
    const r = await post(kind === "rerun" ? "/jobs/rerun" : "/jobs/delete", body);
    pokeStatus();
    notify(kind === "rerun" ? `${counted(r.started, "run started again", "runs started again")}${r.skipped ? `, ${formatCount(r.skipped.length ?? r.skipped)} skipped` : ""}`
      : counted(r.deleted, "run deleted", "runs deleted"), "ok");
    setTicked(new Set());
    runs.reload();
    return r;
  });
  const cancel = useAction(async (id) => { await post(`/jobs/${enc(id)}/cancel`); pokeStatus(); runs.reload(); return true; });
  const [items, countBody] = runs.data || [[], null];
  const total = countBody ? (typeof countBody === "number" ? countBody : countBody.count ?? countBody.total) : 0;
  const pages = Math.max(1, Math.ceil((total || 0) / PAGE));
  const tree = jobTree(query);
  return html`<section class="page runs">
    <p><a href=${href("/automation")}>← Automation</a></p>
    <div class="page-head"><h1>Runs</h1><span class="muted">${counted(total, "run")}</span></div>
    <form class="form-row" role="search" aria-label="Filter the runs" onSubmit=${(e) => { e.preventDefault(); set({ search: search || undefined }); }}>
      <${Field} label="Status">${(id) => html`<select id=${id} value=${query.status || ""} onChange=${(e) => set({ status: e.target.value || undefined })}>
        <option value="">any</option>${STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}</select>`}<//>
      <${Field} label="Workflow">${(id) => html`<select id=${id} value=${query.workflow || ""} onChange=${(e) => set({ workflow: e.target.value || undefined })}>
        <option value="">any</option>${(workflows.data || []).map((w) => html`<option value=${w.name}>${w.name}</option>`)}</select>`}<//>
      <${Field} label="Trigger">${(id) => html`<select id=${id} value=${query.trigger || ""} onChange=${(e) => set({ trigger: e.target.value || undefined })}>
        <option value="">any</option>${TRIGGERS.map((s) => html`<option value=${s}>${s}</option>`)}</select>`}<//>
      <${Field} label="Search runs">${(id) => html`<input id=${id} type="search" data-search value=${search} onInput=${(e) => setSearch(e.target.value)} />`}<//>
    </form>
    <div class="toolbar">
      ${ticked.size ? html`<strong>${formatCount(ticked.size)} ticked</strong>
        <button type="button" onClick=${() => act.run("rerun", { ids: [...ticked] })}>Rerun ticked</button>
        <button type="button" class="danger" onClick=${() => setAsking({ ids: [...ticked] })}>Delete ticked…</button>` : null}
      <button type="button" disabled=${!total || !!query.search} title=${query.search ? "A text search cannot pick runs to rerun: use the filters" : undefined}
        onClick=${() => act.run("rerun", { filter: tree || { field: "status", op: "in", value: STATUSES } })}>Rerun all ${formatCount(total)} shown by the filters</button>
    </div>
    <${ErrorBox} error=${runs.error || act.error || cancel.error} onRetry=${runs.reload} />
    ${runs.loading && !runs.data ? html`<${Loading} />` : html`<div class="table-wrap"><table class="grid" aria-label="runs">
      <thead><tr><th scope="col"><span class="sr-only">tick</span></th><th scope="col">Run</th><th scope="col">Workflow</th><th scope="col">Record</th><th scope="col">Status</th>
        <th scope="col">Trigger</th><th scope="col">Created</th><th scope="col">Summary</th><th scope="col"><span class="sr-only">actions</span></th></tr></thead>
      <tbody>${items.map((j) => html`<tr key=${j.id} data-status=${j.status}>
        <td><input type="checkbox" aria-label=${"tick run " + j.id.slice(-8)} checked=${ticked.has(j.id)}
          onChange=${() => { const s = new Set(ticked); s.has(j.id) ? s.delete(j.id) : s.add(j.id); setTicked(s); }} /></td>
        <td><a href=${href("/automation/runs/" + seg(j.id))}><code>${j.id.slice(-8)}</code></a></td>
        <td>${j.workflow_name}</td>
        <td><a href=${href("/r/" + seg(j.record_id))}>${j.record_name || `${j.schema_name} ${j.record_id.slice(-8)}`}</a>${j.record_name === null ? html` <span class="muted">(deleted)</span>` : null}</td>
        <td><${StatusBadge} status=${j.status} /></td><td>${j.trigger}${j.depth ? ` (depth ${j.depth})` : ""}</td>
        <td>${formatTime(j.created_at)}</td><td>${j.error || j.summary || ""}</td>
        <td>${j.status === "pending" || j.status === "running" ? html`<button type="button" onClick=${() => cancel.run(j.id)}>Cancel</button>` : null}</td>
      </tr>`)}</tbody></table></div>
      ${!items.length ? html`<p class="muted">No run matches.</p>` : null}
      <nav class="pager" aria-label="pages of runs">
        <button type="button" disabled=${page <= 1} onClick=${() => navigate("/automation/runs", { ...query, page: page - 1 })}>Previous</button>
        <span>Page ${formatCount(page)} of ${formatCount(pages)}</span>
        <button type="button" disabled=${page >= pages} onClick=${() => navigate("/automation/runs", { ...query, page: page + 1 })}>Next</button></nav>`}
    ${asking ? html`<${Confirm} title=${`Delete ${counted(asking.ids.length, "run")}?`} danger=${true} confirmLabel="Delete runs"
      message="Deleted runs leave the list for good; what they wrote to records stays in the history."
      onClose=${() => setAsking(null)} onConfirm=${() => act.run("delete", { ids: asking.ids })} />` : null}
  </section>`;
}
