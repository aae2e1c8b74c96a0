// The records table's chart view (#/c/<collection>?schema=…&chart=histogram|scatter|counts):
// the listed records (same schema, filter, search and parent as the table, read through the list
// endpoint's paging up to CHART_CAP records) as a histogram of a numeric field, a scatter of two
// numeric fields coloured by a text field, or counts per value of a text field. The fields are the schema's
// own and those its records inherit from the records above them (asked of the list as `columns`,
// answered under `derived`), so measurements can be coloured by their study's site. Drawn by
// uPlot; every chart has its numbers as a table (the text alternative).
import uPlot from "uplot";
import { html, useEffect, useRef } from "./html.js";
import { get } from "./api.js";
import { href, navigate, seg } from "./router.js";
import { useLoad, Loading, ErrorBox, formatCount, ScrollRegion } from "./ui.js";
import { counted } from "./counting.js";
import { parseFilter, describeLeaf } from "./records-filter.js";
import { leavesOf } from "./filter-tree.js";
import { axisTitle, binValues, chartFields, choicesOf, countBy, groupPoints, isNum, valueOf } from "./chart-data.js";

export const CHART_CAP = 10000;
const PAGE = 1000;
// as many as chart-data.js GROUPS
const COLOURS = ["#1f4f9e", "#b34d00", "#1b6b34", "#7a2a8c", "#8a6d00", "#a4161a", "#00707a", "#545d70"];
const KINDS = [["histogram", "Histogram"], ["scatter", "Scatter"], ["counts", "Counts per value"]];

const fmt = (x) => (Number.isInteger(x) ? formatCount(x) : Number(x.toFixed(2)).toString());

// ---- components ---------------------------------------------------------------------------

// The "Table | Chart" switch: two links, the chart one keeping the table's query.
export function ViewSwitch({ path, query }) {
  const table = { ...query, chart: undefined, cx: undefined, cy: undefined, cby: undefined, bins: undefined };
  return html`<nav class="tabs view-switch" aria-label="Show as">
    <a href=${href(path, table)} aria-current=${query.chart ? undefined : "page"}>Table</a>
    <a href=${href(path, { ...query, chart: query.chart || "histogram", page: undefined })} aria-current=${query.chart ? "page" : undefined}>Chart</a>
  </nav>`;
}

function useAllRecords(name, schema, query, inherited) {
  return useLoad(async (signal) => {
    const common = { schema, filter: parseFilter(query.filter) || undefined, search: query.q || undefined,
      parent_record_id: query.parent || undefined, columns: inherited.length ? inherited : undefined };
    const items = [];
    let total = 0;
    for (let offset = 0; offset < CHART_CAP; offset += PAGE) {
      const page = await get(`/collections/${seg(name)}/records`, { ...common, limit: PAGE, offset }, { signal });
      items.push(...page.items);
      total = page.total_exact === false ? Math.max(page.total, items.length + 1) : page.total;
      if (page.items.length < PAGE) { total = page.total_exact === false ? items.length : total; break; }
    }
    return { items: items.slice(0, CHART_CAP), total, inherited: inherited.join(",") };
  }, [name, schema, query.filter, query.q, query.parent, inherited.join(",")]);
}

export function RecordsChart({ collection, cat, query, path }) {
  const name = collection.name;
  const schema = cat.schema.name;
  const kind = KINDS.some(([k]) => k === query.chart) ? query.chart : "histogram";
  const fields = chartFields(cat);
  const numeric = fields.filter((e) => ["integer", "float"].includes(e.field.type));
  const choice = fields.filter((e) => ["string", "boolean"].includes(e.field.type) || choicesOf(e.field).length);
  const byKey = Object.fromEntries(fields.map((e) => [e.key, e]));
  const pick = (key, list, fallback) => (list.some((e) => e.key === key) ? key : fallback);
  const cx = pick(query.cx, numeric, numeric[0] && numeric[0].key);
  const cy = pick(query.cy, numeric, numeric[1] ? numeric[1].key : cx);
  const cby = query.cby === "" ? "" : pick(query.cby, choice, choice[0] ? choice[0].key : "");
  const bins = Math.min(100, Math.max(2, parseInt(query.bins, 10) || 10));
  const set = (changes) => navigate(path, { ...query, ...changes }, { replace: true });
  const used = { histogram: [cx], scatter: [cx, cy, cby], counts: [cby] }[kind];
  const inherited = [...new Set(used.filter((k) => byKey[k] && byKey[k].inherited))];
  const read = (r, key) => valueOf(byKey[key])(r);
  const data = useAllRecords(name, schema, query, inherited);
  const tree = parseFilter(query.filter);
  const leaves = leavesOf(tree);
  // records read for other inherited fields lack this one's values: wait for the new read
  const ready = data.data && data.data.inherited === inherited.join(",") ? data.data : null;
  const items = ready ? ready.items : [];
  const shown = ready ? items.length : 0;
  const total = ready ? ready.total : 0;

  const select = (label, value, list, onChange, none) => html`<label class="inline">${label}
    <select aria-label=${label} value=${value} onChange=${(e) => onChange(e.target.value)}>
      ${none ? html`<option value="">${none}</option>` : null}
      ${list.map((e) => html`<option value=${e.key}>${e.field.label || e.field.name}</option>`)}</select></label>`;

  let body = null;
  if (ready) {
    if (kind === "histogram") {
      const f = byKey[cx] && byKey[cx].field;
      body = f ? html`<${Histogram} field=${f} bins=${binValues(items.map((r) => read(r, cx)), bins, f.type === "integer")}
        withValue=${items.filter((r) => isNum(read(r, cx))).length} />` : html`<p class="muted">This schema has no numeric field.</p>`;
    } else if (kind === "scatter") {
      body = numeric.length ? html`<${Scatter} x=${byKey[cx].field} y=${byKey[cy].field} by=${cby ? byKey[cby].field : null}
        groups=${groupPoints(items, cx, cy, cby, cby ? choicesOf(byKey[cby].field) : [], read)} />`
        : html`<p class="muted">This schema has no numeric field.</p>`;
    } else {
      const f = byKey[cby] && byKey[cby].field;
      body = f ? html`<${Counts} field=${f} items=${countBy(items, cby, choicesOf(f), read)} />`
        : html`<p class="muted">This schema has no text field to count by.</p>`;
    }
  }

  return html`<div class="records-chart" aria-busy=${data.loading ? "true" : "false"}>
    ${leaves.length || query.q || query.parent ? html`<p class="muted chart-query" data-testid="chart-query">Records where
      ${[...leaves.map((l) => describeLeaf(cat, l)), query.q ? `the search “${query.q}” matches` : null,
        query.parent ? `the parent is ${query.parent}` : null].filter(Boolean).join("; ")}
      (<a href=${href(path, { ...query, chart: undefined, cx: undefined, cy: undefined, cby: undefined, bins: undefined })}>change in the table</a>)</p>` : null}
    <div class="toolbar chart-controls">
      <label class="inline">Chart
        <select aria-label="Chart" value=${kind} onChange=${(e) => set({ chart: e.target.value })}>
          ${KINDS.map(([k, l]) => html`<option value=${k}>${l}</option>`)}</select></label>
      ${kind !== "counts" && numeric.length ? select(kind === "scatter" ? "X axis" : "Field", cx, numeric, (v) => set({ cx: v })) : null}
      ${kind === "histogram" ? html`<label class="inline">Bins
        <input aria-label="Bins" type="number" min="2" max="100" value=${bins} onChange=${(e) => set({ bins: e.target.value })} /></label>` : null}
      ${kind === "scatter" && numeric.length ? select("Y axis", cy, numeric, (v) => set({ cy: v })) : null}
      ${kind === "scatter" ? select("Colour by", cby, choice, (v) => set({ cby: v }), "— none —") : null}
      ${kind === "counts" ? select("Field", cby, choice, (v) => set({ cby: v })) : null}
    </div>
    ${!ready && !data.error ? html`<${Loading} />` : null}
    <${ErrorBox} error=${data.error} onRetry=${data.reload} />
    ${ready ? html`<p class="muted" data-testid="chart-count">${shown < total
      ? `Showing the first ${formatCount(shown)} of ${formatCount(total)} records (a chart reads at most ${formatCount(CHART_CAP)}).`
      : `${counted(shown, "record")}.`}</p>` : null}
    ${body}
  </div>`;
}

function usePlot(make, deps) {
  const box = useRef(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return undefined;
    const width = () => Math.max(160, el.clientWidth);
    const [opts, series] = make(width());
    const plot = new uPlot(opts, series, el);
    const observer = new ResizeObserver(() => plot.setSize({ width: width(), height: opts.height }));
    observer.observe(el);
    return () => { observer.disconnect(); plot.destroy(); };
  }, deps);
  return box;
}

// An integer field's axis: ticks on whole numbers only, written plainly (a study year reads 2007,
// not "2,007.1").
const WHOLE_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1e6, 1e7, 1e8, 1e9];
const wholeTicks = (f) => (f.type === "integer"
  ? { incrs: WHOLE_STEPS, values: (u, splits) => splits.map((v) => (Number.isInteger(v) ? String(v) : "")) } : {});

function NumbersTable({ caption, heads, rows }) {
  return html`<details class="chart-data"><summary>The numbers (${caption})</summary>
    <${ScrollRegion} label=${`${caption} (scrolls)`}><table class="grid" aria-label=${caption}>
      <thead><tr>${heads.map((h, i) => html`<th scope="col" class=${i ? "num" : ""}>${h}</th>`)}</tr></thead>
      <tbody>${rows.map((r) => html`<tr><th scope="row">${r[0]}</th>${r.slice(1).map((c) => html`<td class="num">${c}</td>`)}</tr>`)}</tbody>
    </table><//></details>`;
}

function Histogram({ field, bins, withValue }) {
  const title = axisTitle(field);
  const caption = `${title}: records per bin`;
  const box = usePlot((width) => {
    const xs = bins.map((b) => (b.lo + b.hi) / 2);
    const span = bins.length > 1 ? xs[1] - xs[0] : 1;
    return [{ width, height: 240, legend: { show: false },
      scales: { x: { time: false, auto: false, range: () => [xs[0] - span / 2, xs[xs.length - 1] + span / 2] },
        y: { range: (u, min, max) => [0, Math.max(1, max) * 1.1] } },
      axes: [{ label: title }, { label: "Records", size: 50 }],
      series: [{}, { label: "Records", stroke: COLOURS[0], fill: COLOURS[0] + "99",
        paths: uPlot.paths.bars({ size: [0.9, 200] }), points: { show: false } }] },
    [xs, bins.map((b) => b.count)]];
  }, [JSON.stringify(bins), title]);
  if (!bins.length) return html`<p class="muted">No listed record has a ${field.label || field.name}.</p>`;
  return html`<h2 class="chart-title">${caption}</h2>
    <div class="chart" ref=${box} role="img" aria-label=${`Histogram of ${title}: ${counted(withValue, "record")} with a value in ${counted(bins.length, "bin")}`}></div>
    <${NumbersTable} caption=${caption} heads=${[title, "Records"]}
      rows=${bins.map((b) => [b.lo === b.hi ? fmt(b.lo) : `${fmt(b.lo)} – ${fmt(b.hi)}`, formatCount(b.count)])} />`;
}

function Scatter({ x, y, by, groups }) {
  const xt = axisTitle(x);
  const yt = axisTitle(y);
  const caption = `${yt} against ${xt}${by ? ` by ${by.label || by.name}` : ""}`;
  const box = usePlot((width) => {
    const all = groups.flatMap((g, gi) => g.points.map(([px, py]) => [px, py, gi])).sort((a, b) => a[0] - b[0]);
    const xs = all.map((p) => p[0]);
    const ys = groups.map((_, gi) => all.map((p) => (p[2] === gi ? p[1] : null)));
    return [{ width, height: 300, legend: { show: false }, cursor: { show: false },
      // a margin on both sides: uPlot draws the points between the indexes closest to the
      // scale's ends, so records sharing the largest x (a study year) were drawn only once
      scales: { x: { time: false, range: (u, min, max) => { const pad = (max - min) * 0.03 || 1; return [min - pad, max + pad]; } } },
      axes: [{ label: xt, ...wholeTicks(x) }, { label: yt, size: 60, ...wholeTicks(y) }],
      series: [{}, ...groups.map((g, gi) => ({ label: g.label, stroke: COLOURS[gi % COLOURS.length], paths: () => null,
        points: { show: true, size: 5, width: 1, fill: COLOURS[gi % COLOURS.length] + "aa" } }))] },
    [xs, ...ys]];
  }, [JSON.stringify(groups), xt, yt]);
  if (!groups.length) return html`<p class="muted">No listed record has both ${x.label || x.name} and ${y.label || y.name}.</p>`;
  const stats = (pts, i) => { const v = pts.map((p) => p[i]); return `${fmt(Math.min(...v))} – ${fmt(Math.max(...v))}`; };
  return html`<h2 class="chart-title">${caption}</h2>
    ${by ? html`<ul class="chart-legend" aria-label=${`Colours: ${by.label || by.name}`}>${groups.map((g, gi) => html`<li>
      <span class="swatch" style=${`background: ${COLOURS[gi % COLOURS.length]}`}></span>${g.label} (${formatCount(g.points.length)})</li>`)}</ul>` : null}
    <div class="chart" ref=${box} role="img" aria-label=${`Scatter of ${caption}: ${groups.map((g) => `${g.label} ${formatCount(g.points.length)}`).join(", ")} records`}></div>
    <${NumbersTable} caption=${caption} heads=${[by ? by.label || by.name : "Records", "Records", `${xt} range`, `${yt} range`]}
      rows=${groups.map((g) => [g.label, formatCount(g.points.length), stats(g.points, 0), stats(g.points, 1)])} />`;
}

function Counts({ field, items }) {
  const title = field.label || field.name;
  const caption = `Records per ${title}`;
  const box = usePlot((width) => {
    const xs = items.map((_, i) => i);
    return [{ width, height: 240, legend: { show: false },
      scales: { x: { time: false, auto: false, range: () => [-0.5, items.length - 0.5] },
        y: { range: (u, min, max) => [0, Math.max(1, max) * 1.1] } },
      axes: [{ label: title, splits: () => xs, values: (u, splits) => splits.map((s) => (items[s] ? items[s].label : "")) },
        { label: "Records", size: 50 }],
      series: [{}, { label: "Records", stroke: COLOURS[0], fill: COLOURS[0] + "99",
        paths: uPlot.paths.bars({ size: [0.6, 120] }), points: { show: false } }] },
    [xs, items.map((i) => i.count)]];
  }, [JSON.stringify(items), title]);
  return html`<h2 class="chart-title">${caption}</h2>
    <div class="chart" ref=${box} role="img" aria-label=${`${caption}: ${items.map((i) => `${i.label} ${formatCount(i.count)}`).join(", ")}`}></div>
    <${NumbersTable} caption=${caption} heads=${[title, "Records"]} rows=${items.map((i) => [i.label, formatCount(i.count)])} />`;
}
