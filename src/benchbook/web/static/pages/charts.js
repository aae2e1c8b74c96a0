// Analytics (#/analytics?bucket=&start=&end=): record counts, growth, history activity, run
// status, step durations with percentile markers, runs by trigger, failures by plugin and AI
// tokens. Each chart loads on its own: one that fails shows its error in place, the others still
// draw. The period lives in the hash: `start` and `end` are the first and the last day shown
// (the API's `end` is exclusive, so the day after `end` is sent).
import { html, useState, useEffect } from "../lib/html.js";
import { get } from "../lib/api.js";
import { navigate } from "../lib/router.js";
import { useLoad, Loading, ErrorBox, Field, useTitle } from "../lib/ui.js";
import { counted } from "../lib/counting.js";
import { TimeChart, Bars, pivot, seconds } from "../lib/charts-plot.js";

const BUCKETS = [["day", "Day"], ["week", "Week (from Monday)"], ["month", "Month"]];
const DAY = /^\d{4}-\d{2}-\d{2}$/;

function dayAfter(day) {
  const d = new Date(day + "T00:00:00Z");
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}

function Panel({ title, id, load, deps, children, wide = false }) {
  const state = useLoad(load, deps);
  return html`<section class=${"card chart-card" + (wide ? " wide" : "")} aria-labelledby=${id} aria-busy=${state.loading ? "true" : "false"}>
    <h2 id=${id}>${title}</h2>
    <${ErrorBox} error=${state.error} onRetry=${state.reload}><p>This chart could not be loaded; the others are not affected.</p><//>
    ${state.loading && !state.data ? html`<${Loading} label="Loading this chart…" />`
      : state.data && !state.error ? html`<div class=${state.loading ? "chart-body stale" : "chart-body"}>${children(state.data)}</div>` : null}
  </section>`;
}

function Period({ query, bucket, set }) {
  const [form, setForm] = useState({ start: query.start || "", end: query.end || "" });
  useEffect(() => setForm({ start: query.start || "", end: query.end || "" }), [query.start, query.end]);
  const wrong = form.start && form.end && form.end < form.start ? "The last day is before the first." : null;
  return html`<form class="toolbar chart-period" aria-label="Period" onSubmit=${(e) => {
      e.preventDefault(); if (!wrong) set({ start: form.start || undefined, end: form.end || undefined }); }}>
    <${Field} label="Bucket">${(id) => html`<select id=${id} value=${bucket} onChange=${(e) => set({ bucket: e.target.value })}>
      ${BUCKETS.map(([b, l]) => html`<option value=${b} selected=${b === bucket}>${l}</option>`)}</select>`}<//>
    <${Field} label="First day">${(id) => html`<input id=${id} type="date" value=${form.start}
      onInput=${(e) => setForm({ ...form, start: e.target.value })} />`}<//>
    <${Field} label="Last day" error=${wrong}>${(id, d) => html`<input id=${id} type="date" aria-describedby=${d} value=${form.end}
      onInput=${(e) => setForm({ ...form, end: e.target.value })} />`}<//>
    <div class="field"><button type="submit">Show this period</button></div>
    ${query.start || query.end ? html`<div class="field"><button type="button"
      onClick=${() => set({ start: undefined, end: undefined })}>All time</button></div>` : null}
  </form>`;
}

export default function Charts({ query }) {
  useTitle("Analytics");
  const bucket = BUCKETS.some(([b]) => b === query.bucket) ? query.bucket : "day";
  const start = DAY.test(query.start || "") ? query.start : undefined;
  const end = DAY.test(query.end || "") ? dayAfter(query.end) : undefined;
  const range = { bucket, start, end };
  const span = { start, end };
  const deps = [bucket, start, end];
  const set = (changes) => navigate("/analytics", { ...query, ...changes });
  const period = start || end ? `${start || "the beginning"} to ${query.end || "now"}` : "all time";
  return html`<section class="page analytics">
    <div class="page-head"><h1>Analytics</h1></div>
    <${Period} query=${query} bucket=${bucket} set=${set} />
    <p class="muted" aria-live="polite">Showing ${period}, per ${bucket}. Times are UTC.</p>
    <div class="chart-grid">
      <${Panel} title="Records now, by collection and schema" id="c-counts" deps=${[]} load=${(signal) => get("/analytics/records/counts", {}, { signal })}>
        ${(d) => html`<${Bars} caption="live records by collection and schema" head="Collection · schema"
          items=${d.items.map((i) => ({ label: `${i.dataset} · ${i.schema_name}`, count: i.count }))} />`}<//>
      <${Panel} title=${`Records created per ${bucket}`} id="c-growth" deps=${deps} load=${(signal) => get("/analytics/records/growth", range, { signal })}>
        ${(d) => { const p = pivot(d.items, (r) => `${r.dataset} · ${r.schema_name}`); return html`<div data-testid="growth">
          <${TimeChart} bucket=${d.bucket} caption=${`records created per ${d.bucket}`} days=${p.days} series=${p.series} bars=${true} /></div>`; }}<//>
      <${Panel} title=${`History activity per ${bucket}`} id="c-audit" deps=${deps} load=${(signal) => get("/analytics/audit/events", range, { signal })}>
        ${(d) => { const p = pivot(d.items, "action"); return html`<${TimeChart} bucket=${d.bucket} caption=${`changes per ${d.bucket} by action`} days=${p.days} series=${p.series} />`; }}<//>
      <${Panel} title=${`Runs per ${bucket} by status`} id="c-jobs" deps=${deps} load=${(signal) => get("/analytics/jobs/status", range, { signal })}>
        ${(d) => { const p = pivot(d.items, "status"); return html`<${TimeChart} bucket=${d.bucket} caption=${`runs per ${d.bucket} by status`} days=${p.days} series=${p.series} bars=${true} />`; }}<//>
      <${Panel} title="Step durations" id="c-duration" deps=${[start, end]} load=${(signal) => get("/analytics/jobs/duration", span, { signal })}>
        ${(d) => { const marks = {};
          for (const m of d.percentile_markers || []) (marks[m.bin_label] = marks[m.bin_label] || []).push(m.label);
          return html`<p class="muted">${counted(d.count, "step")} · mean ${seconds(d.avg_seconds)} · shortest ${seconds(d.min_seconds)} · longest ${seconds(d.max_seconds)}</p>
          <${Bars} caption="steps by duration" head="Duration"
            items=${(d.bins || []).map((b) => ({ label: b.label, count: b.count, marks: marks[b.label] || [] }))}
            markers=${[["p50", d.p50_seconds], ["p90", d.p90_seconds], ["p99", d.p99_seconds]].map(([label, s]) => ({ label, text: seconds(s) }))} />`; }}<//>
      <${Panel} title="Runs by trigger" id="c-trigger" deps=${[start, end]} load=${(signal) => get("/analytics/jobs/by-trigger", span, { signal })}>
        ${(d) => html`<${Bars} caption="runs by trigger" head="Trigger" items=${d.items.map((i) => ({ label: i.trigger, count: i.count }))} />`}<//>
      <${Panel} title=${`Failed steps per ${bucket} by plugin`} id="c-failures" deps=${deps} load=${(signal) => get("/analytics/jobs/failures-by-plugin", range, { signal })}>
        ${(d) => { const p = pivot(d.items, "plugin"); return html`<${TimeChart} bucket=${d.bucket} caption=${`failed steps per ${d.bucket} by plugin`}
          days=${p.days} series=${p.series} bars=${true} empty="No failed steps in this period." />`; }}<//>
      <${Panel} title=${`AI tokens per ${bucket}`} id="c-ai" deps=${deps} load=${(signal) => get("/analytics/ai/usage", range, { signal })}>
        ${(d) => { const rows = d.items.flatMap((r) => [{ bucket: r.bucket, kind: "input", count: r.input_tokens ?? 0 },
          { bucket: r.bucket, kind: "output", count: r.output_tokens ?? 0 }]);
          const p = pivot(rows, "kind"); return html`<${TimeChart} bucket=${d.bucket} caption=${`AI tokens per ${d.bucket}`}
            days=${p.days} series=${p.series} bars=${true} empty="The assistant used no tokens in this period." />`; }}<//>
    </div>
  </section>`;
}
