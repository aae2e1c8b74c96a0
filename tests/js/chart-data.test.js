// The records chart's data (lib/chart-data.js), without a browser: own and inherited fields, a
// record's value of each, counts per value and scatter groups, folded when a field has no choices.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GROUPS, MAX_BARS, binValues, chartFields, countBy, groupPoints, valueOf } from "../../src/benchbook/web/static/lib/chart-data.js";

const site = { name: "site", label: "Site", type: "string" };
const cat = {
  own: [{ name: "mass", label: "Mass", type: "float" }, { name: "kind", type: "string", restrictions: { choices: ["a", "b"] } }],
  inherited: [{ key: "site", field: site, owner: "study", label: "Site (Study)" }],
};

test("a chart can use the schema's own fields and those its records inherit", () => {
  const fields = chartFields(cat);
  assert.deepEqual(fields.map((e) => [e.key, e.inherited, e.field.label]),
    [["mass", false, "Mass"], ["kind", false, undefined], ["site", true, "Site (Study)"]]);
  const record = { data: { mass: 2.5, site: "own data is not the inherited value" }, derived: { site: "North ridge" } };
  assert.equal(valueOf(fields[0])(record), 2.5);
  assert.equal(valueOf(fields[2])(record), "North ridge");
  assert.equal(valueOf(fields[2])({ data: {} }), undefined);
});

test("counts keep a field's choices in order and count what is missing", () => {
  const items = [{ data: { kind: "b" } }, { data: { kind: "a" } }, { data: { kind: "b" } }, { data: {} }];
  assert.deepEqual(countBy(items, "kind", ["a", "b"]), [{ label: "a", count: 1 }, { label: "b", count: 2 }, { label: "(none)", count: 1 }]);
});

test("counts of a field without choices read through `read`, by label, folded beyond MAX_BARS", () => {
  const read = (r, key) => r.derived[key];
  const few = ["Dream", "Biscoe", "Dream"].map((s) => ({ derived: { site: s } }));
  assert.deepEqual(countBy(few, "site", [], read), [{ label: "Biscoe", count: 1 }, { label: "Dream", count: 2 }]);
  const many = Array.from({ length: MAX_BARS + 5 }, (_, i) => ({ derived: { site: `s${String(i).padStart(2, "0")}` } }));
  many.push({ derived: { site: "s24" } });
  const bars = countBy(many, "site", [], read);
  assert.equal(bars.length, MAX_BARS);
  assert.deepEqual(bars[0], { label: "s24", count: 2 });
  assert.deepEqual(bars[MAX_BARS - 1], { label: "(6 other values)", count: 6 });
  assert.equal(bars.reduce((n, b) => n + b.count, 0), many.length);
});

test("scatter groups skip records missing a coordinate and fold beyond GROUPS colours", () => {
  const items = Array.from({ length: GROUPS + 2 }, (_, i) => ({ data: { x: i, y: 2 * i, g: `g${i}` } }));
  items.push({ data: { x: 1, g: "g0" } });  // no y: not drawn
  const groups = groupPoints(items, "x", "y", "g");
  assert.equal(groups.length, GROUPS);
  assert.equal(groups[GROUPS - 1].label, "(3 other values)");
  assert.equal(groups.reduce((n, g) => n + g.points.length, 0), GROUPS + 2);
  assert.deepEqual(groupPoints(items, "x", "y", ""), [{ label: "all", points: items.slice(0, -1).map((r) => [r.data.x, r.data.y]) }]);
});

test("histogram bins hold every value once", () => {
  const bins = binValues([1, 2, 3, 4, 10, null, "x"], 3);
  assert.equal(bins.length, 3);
  assert.equal(bins.reduce((n, b) => n + b.count, 0), 5);
});
