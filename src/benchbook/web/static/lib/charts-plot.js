// Charts for the analytics page: time series drawn by uPlot (vendored 1.6.32), sized to their
// box and redrawn when it resizes; categorical counts as labelled bars. Every chart has a text
// alternative: the same numbers in a table inside <details>.
import uPlot from "uplot";
import { html, useEffect, useRef } from "./html.js";
import { formatCount } from "./ui.js";

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
    <div class="table-wrap"><table class="grid" aria-label=${caption}>
      <thead><tr><th scope="col">Period</th>${series.map((s) => html`<th scope="col" class="num">${s.label}</th>`)}</tr></thead>
      <tbody>${days.map((d, i) => html`<tr><th scope="row">${d}</th>${series.map((s) => html`<td class="num">${formatCount(s.values[i])}</td>`)}</tr>`)}</tbody>
    </table></div></details>`;
}

const BUCKET_SECONDS = { day: 86400, week: 7 * 86400, month: 31 * 86400 };

// `bucket` (day, week, month) sets the x range's padding: half a bucket either side, so one
// bucket is drawn as one bar, not stretched over years.
export function TimeChart({ caption, days, series, bars = false, bucket = "day" }) {
  const box = useRef(null);
  const asBars = bars || days.length < 3;
  useEffect(() => {
    const el = box.current;
    if (!el || !days.length) return undefined;
    const xs = days.map((d) => Date.parse(d + "T00:00:00Z") / 1000);
    const pad = (BUCKET_SECONDS[bucket] || 86400) / 2;
    const opts = {
      width: Math.max(240, el.clientWidth), height: 220, legend: { show: true },
      scales: { x: { time: true, auto: false, range: () => [xs[0] - pad, xs[xs.length - 1] + pad] }, y: { range: (u, min, max) => [0, Math.max(1, max) * 1.1] } },
      axes: [{}, { size: 60 }],
      series: [{}, ...series.map((s, i) => ({ label: String(s.label), stroke: COLOURS[i % COLOURS.length],
        fill: asBars ? COLOURS[i % COLOURS.length] + "55" : undefined, width: 2,
        paths: asBars && uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.6, 60] }) : undefined,
        points: { show: days.length < 40 } }))],
    };
    const plot = new uPlot(opts, [xs, ...series.map((s) => s.values)], el);
    const observer = new ResizeObserver(() => plot.setSize({ width: Math.max(240, el.clientWidth), height: 220 }));
    observer.observe(el);
    return () => { observer.disconnect(); plot.destroy(); };
  }, [JSON.stringify(days), JSON.stringify(series), asBars, bucket]);
  if (!days.length) return html`<p class="muted">Nothing in this range.</p>`;
  return html`<div class="chart" ref=${box} role="img" aria-label=${`${caption}: ${series.map((s) =>
    `${s.label} ${formatCount(s.values.reduce((a, b) => a + b, 0))}`).join(", ")} over ${days.length} periods`}></div>
    <${DataTable} caption=${caption} days=${days} series=${series} />`;
}

// items: [{label, count}]; markers: [{label, at (0..1 of the width), text}] drawn over the bars.
export function Bars({ caption, items, markers = [] }) {
  const max = Math.max(1, ...items.map((i) => i.count));
  if (!items.length) return html`<p class="muted">Nothing yet.</p>`;
  return html`<div class="bars" role="list" aria-label=${caption}>
    ${items.map((i) => html`<div class="bar-row" role="listitem"><span class="bar-label">${i.label}</span>
      <span class="bar-track"><span class="bar" style=${`width: ${(100 * i.count) / max}%`}></span></span>
      <span class="bar-value">${formatCount(i.count)}</span></div>`)}
    ${markers.length ? html`<p class="markers">${markers.map((m) => html`<span class="marker"><strong>${m.label}</strong> ${m.text}</span>`)}</p>` : null}
  </div>`;
}
