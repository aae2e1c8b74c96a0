// Analytics (#/analytics?bucket=&start=&end=): record counts, growth, history activity, run
// status, run durations with percentile markers, runs by trigger, failures by plugin and AI
// tokens. Each chart loads on its own: one that fails shows its error, the others still draw.
import { html, useState } from "../lib/html.js";
import { get } from "../lib/api.js";
import { navigate } from "../lib/router.js";
import { useLoad, Loading, ErrorBox, Field, useTitle } from "../lib/ui.js";
import { TimeChart, Bars, pivot } from "../lib/charts-plot.js";

const BUCKETS = ["day", "week", "month"];

function Panel({ title, id, load, deps, children }) {
  const state = useLoad(load, deps);
  return html`<section class="card chart-card" aria-labelledby=${id}><h2 id=${id}>${title}</h2>
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${state.loading && !state.data ? html`<${Loading} />` : state.data ? children(state.data) : null}
  </section>`;
}

function seconds(s) { return s === null || s === undefined ? "—" : s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(2)} s`; }

export default function Charts({ query }) {
  useTitle("Analytics");
  const bucket = BUCKETS.includes(query.bucket) ? query.bucket : "day";
  const range = { bucket, start: query.start || undefined, end: query.end || undefined };
  const [form, setForm] = useState({ start: query.start || "", end: query.end || "" });
  const deps = [bucket, query.start, query.end];
  const set = (changes) => navigate("/analytics", { ...query, ...changes });
  return html`<section class="page analytics">
    <div class="page-head"><h1>Analytics</h1></div>
    <form class="form-row range" aria-label="Period" onSubmit=${(e) => { e.preventDefault(); set({ start: form.start || undefined, end: form.end || undefined }); }}>
      <${Field} label="Bucket">${(id) => html`<select id=${id} value=${bucket} onChange=${(e) => set({ bucket: e.target.value })}>
        ${BUCKETS.map((b) => html`<option value=${b}>${b}</option>`)}</select>`}<//>
      <${Field} label="From">${(id) => html`<input id=${id} type="date" value=${form.start} onInput=${(e) => setForm({ ...form, start: e.target.value })} />`}<//>
      <${Field} label="To">${(id) => html`<input id=${id} type="date" value=${form.end} onInput=${(e) => setForm({ ...form, end: e.target.value })} />`}<//>
      <div class="field"><button type="submit">Show this period</button></div>
    </form>
    <div class="chart-grid">
      <${Panel} title="Records by collection and schema" id="c-counts" deps=${[]} load=${(signal) => get("/analytics/records/counts", {}, { signal })}>
        ${(d) => html`<${Bars} caption="records by collection and schema" items=${d.items.map((i) => ({ label: `${i.dataset} · ${i.schema_name}`, count: i.count }))} />`}<//>
      <${Panel} title=${`Records created per ${bucket}`} id="c-growth" deps=${deps} load=${(signal) => get("/analytics/records/growth", range, { signal })}>
        ${(d) => { const p = pivot(d.items, (r) => `${r.dataset} · ${r.schema_name}`); return html`<div data-testid="growth">
          <${TimeChart} bucket=${bucket} caption=${`records created per ${bucket}`} days=${p.days} series=${p.series} bars=${true} /></div>`; }}<//>
      <${Panel} title=${`History activity per ${bucket}`} id="c-audit" deps=${deps} load=${(signal) => get("/analytics/audit/events", range, { signal })}>
        ${(d) => { const p = pivot(d.items, "action"); return html`<${TimeChart} bucket=${bucket} caption=${`changes per ${bucket}`} days=${p.days} series=${p.series} />`; }}<//>
      <${Panel} title=${`Runs per ${bucket} by status`} id="c-jobs" deps=${deps} load=${(signal) => get("/analytics/jobs/status", range, { signal })}>
        ${(d) => { const p = pivot(d.items, "status"); return html`<${TimeChart} bucket=${bucket} caption=${`runs per ${bucket} by status`} days=${p.days} series=${p.series} bars=${true} />`; }}<//>
      <${Panel} title="Run durations" id="c-duration" deps=${[query.start, query.end]} load=${(signal) => get("/analytics/jobs/duration", { start: range.start, end: range.end }, { signal })}>
        ${(d) => html`<p class="muted">${d.count} runs · mean ${seconds(d.avg_seconds)}</p>
          <${Bars} caption="runs by duration" items=${(d.bins || []).map((b) => ({ label: b.label, count: b.count }))}
            markers=${[["p50", d.p50_seconds], ["p90", d.p90_seconds], ["p99", d.p99_seconds], ["max", d.max_seconds]]
              .map(([label, s]) => ({ label, text: seconds(s) }))} />`}<//>
      <${Panel} title="Runs by trigger" id="c-trigger" deps=${[query.start, query.end]} load=${(signal) => get("/analytics/jobs/by-trigger", { start: range.start, end: range.end }, { signal })}>
        ${(d) => html`<${Bars} caption="runs by trigger" items=${d.items.map((i) => ({ label: i.trigger, count: i.count }))} />`}<//>
      <${Panel} title=${`Failures per ${bucket} by plugin`} id="c-failures" deps=${deps} load=${(signal) => get("/analytics/jobs/failures-by-plugin", range, { signal })}>
        ${(d) => { const p = pivot(d.items, (r) => r.plugin || r.plugin_id || "?"); return html`<${TimeChart} bucket=${bucket} caption=${`failures per ${bucket} by plugin`} days=${p.days} series=${p.series} bars=${true} />`; }}<//>
      <${Panel} title=${`AI tokens per ${bucket}`} id="c-ai" deps=${deps} load=${(signal) => get("/analytics/ai/usage", range, { signal })}>
        ${(d) => { const rows = d.items.flatMap((r) => [{ bucket: r.bucket, kind: "input", count: r.input_tokens ?? 0 },
          { bucket: r.bucket, kind: "output", count: r.output_tokens ?? 0 }]);
          const p = pivot(rows, "kind"); return html`<${TimeChart} bucket=${bucket} caption=${`AI tokens per ${bucket}`} days=${p.days} series=${p.series} bars=${true} />`; }}<//>
    </div>
  </section>`;
}
