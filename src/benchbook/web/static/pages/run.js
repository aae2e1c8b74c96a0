// One run (#/automation/runs/<id>): status, what triggered it (changed fields with the watched
// ones marked, the run whose save caused it), its steps, its log, the records it changed;
// cancel while it waits or runs, rerun after. Polls while it is not finished.
import { html, useEffect } from "../lib/html.js";
import { get, post, enc } from "../lib/api.js";
import { href, navigate, seg } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, notify, useTitle, formatTime, formatValue, formatBytes, ScrollRegion } from "../lib/ui.js";
import { counted } from "../lib/counting.js";
import { StatusBadge } from "../lib/automation-common.js";
import { pokeStatus } from "../lib/status.js";

// What a step returned (its `outputs`, one line per port), or why it is not shown.
function Outputs({ step }) {
  if (step.outputs) {
    const ports = Object.entries(step.outputs);
    if (!ports.length) return html`<span class="muted">no outputs</span>`;
    return html`<dl class="props outputs" aria-label=${`outputs of ${step.step_id}`}>${ports.map(([port, value]) => html`<dt>${port}</dt>
      <dd>${value && typeof value === "object" && value.type === "bytes" ? `${formatBytes(value.size)} of bytes`
        : value && typeof value === "object" && value.type === "table" ? `a table of ${counted(value.rows, "row")} (${value.columns.join(", ")})`
        : formatValue(value)}</dd>`)}</dl>`;
  }
  if (step.outputs === null && step.outputs_bytes) return html`<span class="muted">outputs of ${formatBytes(step.outputs_bytes)}: too large to keep with the run</span>`;
  return null;
}

export default function Run({ params }) {
  const id = params.job;
  const state = useLoad((signal) => get(`/jobs/${enc(id)}`, {}, { signal }), [id]);
  const j = state.data;
  const live = j && (j.status === "pending" || j.status === "running");
  useEffect(() => { if (!live) return undefined; const t = setTimeout(state.reload, 1000); return () => clearTimeout(t); }, [j, live]);
  const cancel = useAction(async () => { await post(`/jobs/${enc(id)}/cancel`); pokeStatus(); state.reload(); return true; });
  const rerun = useAction(async () => { const r = await post(`/jobs/${enc(id)}/rerun`); pokeStatus(); notify("Started again", "ok");
    navigate("/automation/runs/" + seg(r.id || (r.job_ids && r.job_ids[0]) || id)); return r; });
  useTitle("Run");
  if (state.loading && !j) return html`<${Loading} />`;
  if (state.error && !j) return html`<section class="page"><h1>Run</h1><${ErrorBox} error=${state.error} onRetry=${state.reload} /></section>`;
  const detail = j.trigger_detail;
  return html`<section class="page run-page">
    <p><a href=${href("/automation/runs", { workflow: j.workflow_name })}>← Runs of ${j.workflow_name}</a></p>
    <div class="page-head"><h1>Run <code>${j.id.slice(-8)}</code> <${StatusBadge} status=${j.status} /></h1>
      <div class="actions">${live ? html`<button type="button" onClick=${cancel.run}>Cancel run</button>`
        : html`<button type="button" onClick=${rerun.run}>Run again</button>`}</div></div>
    <${ErrorBox} error=${cancel.error || rerun.error} />
    <dl class="props">
      <dt>Workflow</dt><dd><a href=${href("/automation/workflows/" + seg(j.workflow_name))}>${j.workflow_name}</a></dd>
      <dt>Record</dt><dd>${j.record_name !== null && j.record_name !== undefined
        ? html`<a href=${href("/r/" + seg(j.record_id))}>${j.record_name || j.record_id.slice(-8)}</a> (${j.schema_name})`
        : html`<a href=${href("/r/" + seg(j.record_id))}>${j.schema_name} ${j.record_id.slice(-8)}</a> <span class="muted">(deleted or gone)</span>`}</dd>
      <dt>Trigger</dt><dd>${j.trigger}${j.depth ? ` · depth ${j.depth}` : ""}${detail && detail.caused_by ? html` · caused by run
        <a href=${href("/automation/runs/" + seg(detail.caused_by.job_id))}>${detail.caused_by.job_id.slice(-8)}</a> (${detail.caused_by.workflow})` : ""}</dd>
      <dt>Created</dt><dd>${formatTime(j.created_at)}</dd><dt>Started</dt><dd>${formatTime(j.started_at) || "—"}</dd>
      <dt>Finished</dt><dd>${formatTime(j.finished_at) || "—"}</dd>
      ${j.error ? html`<dt>Error</dt><dd class="error">${j.error}</dd>` : null}
    </dl>
    ${detail && (detail.changes || []).length ? html`<section aria-labelledby="changes-h"><h2 id="changes-h">What changed</h2>
      <${ScrollRegion} label="What changed (scrolls)"><table class="grid" aria-label="trigger changes"><thead><tr><th scope="col">Field</th><th scope="col">Before</th>
        <th scope="col">After</th><th scope="col">Watched</th></tr></thead>
      <tbody>${detail.changes.map((c) => html`<tr><td>${c.label || c.field}</td><td>${formatValue(c.before)}</td><td>${formatValue(c.after)}</td>
        <td>${c.watched ? "yes" : "no"}</td></tr>`)}</tbody></table><//></section>` : null}
    <section aria-labelledby="steps-h"><h2 id="steps-h">Steps</h2>
      ${(j.step_executions || []).length ? html`<${ScrollRegion} label="Steps (scrolls)"><table class="grid" aria-label="steps"><thead><tr><th scope="col">Step</th>
        <th scope="col">Plugin</th><th scope="col">Status</th><th scope="col" class="num">ms</th><th scope="col">Outputs / error</th></tr></thead>
        <tbody>${j.step_executions.map((s) => html`<tr><td>${s.step_id}</td><td>${s.plugin}</td><td><${StatusBadge} status=${s.status} /></td>
          <td class="num">${s.duration_ms ?? ""}</td><td>${s.error ? html`<p class="error">${s.error}</p>` : null}<${Outputs} step=${s} /></td></tr>`)}</tbody></table><//>`
        : html`<p class="muted">${live ? "Not run yet." : "No step ran."}</p>`}</section>
    <section aria-labelledby="log-h"><h2 id="log-h">Log</h2>${j.log ? html`<pre class="log" tabindex="0" role="region" aria-label="Run log (scrolls)">${j.log}</pre>` : html`<p class="muted">Empty.</p>`}</section>
    <section aria-labelledby="affected-h"><h2 id="affected-h">Records it changed</h2>
      ${(j.affected_records || []).length ? html`<ul class="plain">${j.affected_records.map((r) => { const rid = typeof r === "string" ? r : r.id || r.record_id;
        return html`<li><a href=${href("/r/" + seg(rid))}>${(r && r.natural_name) || rid}</a></li>`; })}</ul>` : html`<p class="muted">None.</p>`}</section>
  </section>`;
}
