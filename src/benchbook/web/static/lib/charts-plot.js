// Charts for the analytics page: time series drawn by uPlot (vendored 1.6.32), sized to their
// box and redrawn when it resizes; categorical counts as labelled bars. Every chart has a text
// alternative: the same numbers in a table inside <details>.
import uPlot from "uplot";
import { html, useEffect, useRef } from "./html.js";
import { formatCount, ScrollRegion } from "./ui.js";
import { counted } from "./counting.js";

const COLOURS = ["#1f4f9e", "#b34d00", "#1b6b34", "#7a2a8c", "#8a6d00", "#a4161a", "#00707a", "#545d70"];

// rows: [{bucket, <key>, count}] → {days: [...], series: [{label, values}]} with 0 for gaps.
export function pivot(rows, key) {
  const days = [...new Set(rows.map((r) => r.bucket))].sort();
  const labels = [...new Set(rows.map((r) => (typeof key === "function" ? key(r) : r[key])))];
  const series = labels.map((label) => ({ label, values: days.map((d) => rows.filter((r) => r.bucket === d
    && (typeof key === "function" ? key(r) : r[key]) === label).reduce((n, r) => n + (r.count ?? 0), 0)) }));
  return { days, series };
}

function DataTable({ caption, days, series }) {
  return html`<details class="chart-data"><summary>The numbers (${caption})</summary>
    <${ScrollRegion} label=${`${caption} (scrolls)`}><table class="grid" aria-label=${caption}>
      <thead><tr><th scope="col">Period</th>${series.map((s) => html`<th scope="col" class="num">${s.label}</th>`)}</tr></thead>
      <tbody>${days.map((d, i) => html`<tr><th scope="row">${d}</th>${series.map((s) => html`<td class="num">${formatCount(s.values[i])}</td>`)}</tr>`)}</tbody>
    </table><//></details>`;
}

// A duration in seconds as text: "—" for none, milliseconds under a second.
export function seconds(s) {
  if (s === null || s === undefined) return "—";
  return s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(2)} s`;
}

const BUCKET_SECONDS = { day: 86400, week: 7 * 86400, month: 31 * 86400 };

// `bucket` (day, week, month) sets the x range's padding: half a bucket either side, so one
// bucket is drawn as one bar, not stretched over years.
export function TimeChart({ caption, days, series, bars = false, bucket = "day", empty = "Nothing in this period." }) {
  const box = useRef(null);
  const asBars = bars || days.length < 3;
  useEffect(() => {
    const el = box.current;
    if (!el || !days.length) return undefined;
    const xs = days.map((d) => Date.parse(d + "T00:00:00Z") / 1000);
    const pad = (BUCKET_SECONDS[bucket] || 86400) / 2;
    // Bars of several series are stacked (each drawn up to the running total, the tallest
    // first); the legend still shows each series' own count.
    const stacked = asBars && series.length > 1;
    const totals = [];
    series.forEach((s, i) => totals.push(s.values.map((v, j) => v + (i ? totals[i - 1][j] : 0))));
    const order = stacked ? series.map((_, i) => series.length - 1 - i) : series.map((_, i) => i);
    const label = (t) => { const d = new Date(t * 1000).toISOString();
      return bucket === "month" ? d.slice(0, 7) : d.slice(5, 10); };
    const few = xs.length <= 8;
    const opts = {
      width: Math.max(160, el.clientWidth), height: 220, legend: { show: true },
      scales: { x: { time: true, auto: false, range: () => [xs[0] - pad, xs[xs.length - 1] + pad] },
        y: { range: (u, min, max) => [0, Math.max(1, max) * 1.1] } },
      axes: [few ? { splits: () => xs, values: (u, splits) => splits.map(label) } : {}, { size: 60 }],
      series: [{ value: (u, t) => (t == null ? "—" : new Date(t * 1000).toISOString().slice(0, bucket === "month" ? 7 : 10)) },
        ...order.map((i) => ({ label: String(series[i].label), stroke: COLOURS[i % COLOURS.length],
          fill: asBars ? COLOURS[i % COLOURS.length] + (stacked ? "cc" : "55") : undefined, width: 2,
          paths: asBars && uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.6, 60] }) : undefined,
          value: (u, v, si, idx) => (idx == null ? "—" : formatCount(series[i].values[idx])),
          points: { show: !asBars && days.length < 40 } }))],
    };
    const data = [xs, ...order.map((i) => (stacked ? totals[i] : series[i].values))];
    const plot = new uPlot(opts, data, el);
    const observer = new ResizeObserver(() => plot.setSize({ width: Math.max(160, el.clientWidth), height: 220 }));
    observer.observe(el);
    return () => { observer.disconnect(); plot.destroy(); };
  }, [JSON.stringify(days), JSON.stringify(series), asBars, bucket]);
  if (!days.length) return html`<p class="muted">${empty}</p>`;
  return html`<div class="chart" ref=${box} role="img" aria-label=${`${caption}: ${series.map((s) =>
    `${s.label} ${formatCount(s.values.reduce((a, b) => a + b, 0))}`).join(", ")} over ${counted(days.length, "period")}`}></div>
    <${DataTable} caption=${caption} days=${days} series=${series} />`;
}

// items: [{label, count, marks?: ["p50", ...]}]; markers: [{label, text}] listed under the bars.
// The bars are a list with their numbers; the same numbers are also a table inside <details>.
export function Bars({ caption, items, head = "Item", markers = [] }) {
  const max = Math.max(1, ...items.map((i) => i.count));
  if (!items.length) return html`<p class="muted">Nothing yet.</p>`;
  const marked = items.some((i) => i.marks && i.marks.length);
  return html`<div class="bars" role="list" aria-label=${caption}>
    ${items.map((i) => html`<div class="bar-row" role="listitem"><span class="bar-label" title=${i.label}>${i.label}</span>
      <span class="bar-track"><span class="bar" style=${`width: ${(100 * i.count) / max}%`}></span>
        ${(i.marks || []).length ? html`<span class="bar-marks">${i.marks.join(" ")}</span>` : null}</span>
      <span class="bar-value">${formatCount(i.count)}</span></div>`)}
  </div>
  ${markers.length ? html`<p class="markers">${markers.map((m) => html`<span class="marker"><strong>${m.label}</strong> ${m.text}</span>`)}</p>` : null}
  <details class="chart-data"><summary>The numbers (${caption})</summary>
    <${ScrollRegion} label=${`${caption} (scrolls)`}><table class="grid" aria-label=${caption}>
      <thead><tr><th scope="col">${head}</th><th scope="col" class="num">Count</th>${marked ? html`<th scope="col">Percentiles</th>` : null}</tr></thead>
      <tbody>${items.map((i) => html`<tr><th scope="row">${i.label}</th><td class="num">${formatCount(i.count)}</td>
        ${marked ? html`<td>${(i.marks || []).join(", ")}</td>` : null}</tr>`)}</tbody>
    </table><//></details>`;
}
