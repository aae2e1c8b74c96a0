// The records chart's data, pure (no browser, no uPlot: tests/js/chart-data.test.js): the
// fields a chart can use (own and inherited), a record's value of one, histogram bins, counts
// per value and scatter groups, and an axis title with its unit.
import { counted } from "./counting.js";

export const GROUPS = 8;  // colours of a scatter: a field without choices shows at most this many groups
export const MAX_BARS = 20;  // bars of counts per value of a field without choices

export const isNum = (v) => typeof v === "number" && Number.isFinite(v);
export const choicesOf = (f) => (f.restrictions && Array.isArray(f.restrictions.choices) ? f.restrictions.choices : []);
const ownValue = (r, key) => (r.data ? r.data[key] : undefined);

// The fields a chart can use: the schema's own, then the inherited ones ([{key, field, inherited}],
// the field's label naming the schema it comes from when inherited).
export function chartFields(cat) {
  return [...cat.own.map((f) => ({ key: f.name, field: f, inherited: false })),
    ...cat.inherited.map((c) => ({ key: c.key, field: { ...c.field, label: c.label }, inherited: true }))];
}

// A record's value of a chart field: its own data, or what the list answered under `derived`.
export const valueOf = (entry) => (entry && entry.inherited
  ? (r) => (r.derived ? r.derived[entry.key] : undefined)
  : (r) => ownValue(r, entry ? entry.key : undefined));

// values → [{lo, hi, count}]: `bins` equal bins from min to max (the last one closed), integer
// fields get whole-number edges when they span fewer values than bins.
export function binValues(values, bins = 10, integer = false) {
  const xs = values.filter(isNum);
  if (!xs.length) return [];
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  if (lo === hi) return [{ lo, hi, count: xs.length }];
  let n = bins;
  let width = (hi - lo) / n;
  if (integer) {
    width = Math.max(1, Math.ceil((hi - lo + 1) / bins));
    n = Math.ceil((hi - lo + 1) / width);
  }
  const out = Array.from({ length: n }, (_, i) => ({ lo: lo + i * width, hi: lo + (i + 1) * width - (integer ? 1 : 0), count: 0 }));
  for (const x of xs) out[Math.min(n - 1, Math.floor((x - lo) / width))].count += 1;
  if (!integer) out[n - 1].hi = hi;
  return out;
}

// [[label, x], …] of a field without choices, by label → at most `max`: the most common first
// (`size(x)`, then by label), the rest merged (`merge([x, …])`) into one "(N other values)".
function fold(entries, size, merge, max) {
  const byLabel = [...entries].sort((a, b) => a[0].localeCompare(b[0]));
  if (byLabel.length <= max) return byLabel;
  const sorted = byLabel.sort((a, b) => size(b[1]) - size(a[1]) || a[0].localeCompare(b[0]));
  const rest = sorted.slice(max - 1);
  return [...sorted.slice(0, max - 1), [`(${counted(rest.length, "other value")})`, merge(rest.map((e) => e[1]))]];
}

// items → [{label, count}] per value present: a field's choices in their order (then any other
// value or "(none)"); a field without choices by its values, at most MAX_BARS bars (fold).
// `read(record, key)` gives a record's value (its own data by default).
export function countBy(items, key, choices = [], read = ownValue) {
  const counts = new Map(choices.map((c) => [String(c), 0]));
  for (const r of items) {
    const label = categoryOf(read(r, key));
    counts.set(label, (counts.get(label) || 0) + 1);
  }
  let entries = [...counts].filter(([, count]) => count);
  if (!choices.length) {
    entries = fold(entries, (c) => c, (cs) => cs.reduce((n, c) => n + c, 0), MAX_BARS);
  }
  return entries.map(([label, count]) => ({ label, count }));
}

const categoryOf = (v) => (v === null || v === undefined || v === "" ? "(none)" : String(v));

// items → [{label, points: [[x, y], …]}] grouped by the colour field (one group when none);
// `read(record, key)` gives a record's value (its own data by default).
export function groupPoints(items, xKey, yKey, byKey, choices = [], read = ownValue) {
  const groups = new Map(choices.map((c) => [String(c), []]));
  for (const r of items) {
    const x = read(r, xKey);
    const y = read(r, yKey);
    if (!isNum(x) || !isNum(y)) continue;
    const label = byKey ? categoryOf(read(r, byKey)) : "all";
    if (!groups.has(label)) groups.set(label, []);
    groups.get(label).push([x, y]);
  }
  let entries = [...groups].filter(([, points]) => points.length);
  if (!choices.length && byKey) {  // a field without choices: as many groups as there are colours
    entries = fold(entries, (pts) => pts.length, (lists) => lists.flat(), GROUPS);
  }
  return entries.map(([label, points]) => ({ label, points }));
}

export const axisTitle = (f) => {
  const unit = f.restrictions && f.restrictions.unit;
  const label = f.label || f.name;
  return unit && !label.includes(`(${unit})`) ? `${label} (${unit})` : label;
};
