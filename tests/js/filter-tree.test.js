// The filter tree's pure helpers (lib/filter-tree.js), without a browser: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { asRoot, catalogue, compact, describeLeaf, errorPathOf, leavesOf, parseFilter, pathKinds, replaceAt } from
  "../../src/benchbook/web/static/lib/filter-tree.js";

const SCHEMAS = [
  { name: "island", label: "Island", parent: null, fields: [{ name: "name", label: "Name", type: "string" },
    { name: "area", type: "float" }] },
  { name: "penguin", parent: "island", fields: [{ name: "name", type: "string" }, { name: "species", label: "Species", type: "string" },
    { name: "old", type: "string", deleted_at: "2026-01-01" }, { name: "nest", type: "reference", restrictions: { schema: "site" } }] },
  { name: "site", parent: null, fields: [{ name: "code", type: "string" }] },
  { name: "egg", parent: "penguin", fields: [{ name: "mass", type: "float" }] },
];

test("the catalogue resolves own, inherited (nearest owner wins), ref and descendant fields", () => {
  const cat = catalogue(SCHEMAS, "penguin", ["island", "penguin", "egg"]);
  assert.deepEqual(cat.own.map((f) => f.name), ["name", "species", "nest"]);  // the deleted field is left out
  assert.deepEqual(cat.inherited.map((c) => c.key), ["area"]);  // island.name is hidden by the own name
  assert.equal(cat.inherited[0].sort, "island.area");
  assert.deepEqual(cat.refs.map((c) => c.key), ["nest.code"]);
  assert.deepEqual(cat.descendants.map((s) => s.name), ["egg"]);
  assert.deepEqual(cat.defaultColumns, ["natural_name", "name", "species", "nest"]);
  assert.equal(catalogue(SCHEMAS, "nope"), null);
  const named = SCHEMAS.map((x) => (x.name === "island" ? { ...x, display_template: "{name}" } : x));
  assert.deepEqual(catalogue(named, "island").defaultColumns, ["natural_name", "area"]);  // name is the Name column already
  assert.deepEqual(catalogue(SCHEMAS, "penguin", ["penguin"]).descendants, []);  // egg not in the collection
});

test("a leaf reads in words, with its schema when it is not the table's", () => {
  const cat = catalogue(SCHEMAS, "penguin");
  assert.equal(describeLeaf(cat, { field: "species", op: "eq", value: "Gentoo" }), "Species = Gentoo");
  assert.equal(describeLeaf(cat, { field: "species", op: "in", value: ["Adelie", "Gentoo"] }), "Species is one of Adelie, Gentoo");
  assert.equal(describeLeaf(cat, { field: "mass", op: "gt", value: 50, schema: "egg" }), "any egg › mass > 50");
  assert.equal(describeLeaf(cat, { field: "name", op: "is_null", value: false, schema: "island" }), "island › Name is not empty");
});

test("trees: a lone leaf becomes a group, empty groups vanish, paths name the nodes", () => {
  const leaf = { field: "species", op: "eq", value: "Gentoo" };
  assert.deepEqual(asRoot(null), { and: [] });
  assert.deepEqual(asRoot(leaf), { and: [leaf] });
  assert.equal(compact({ and: [{ or: [] }] }), null);
  assert.deepEqual(compact({ and: [leaf, { or: [{ and: [] }] }] }), { and: [leaf] });
  const root = { and: [leaf, { or: [leaf, leaf] }] };
  assert.deepEqual(replaceAt(root, [1, 0], () => null), { and: [leaf, { or: [leaf] }] });
  assert.deepEqual(pathKinds(root, [1, 0]), [1, "or", 0]);
  assert.equal(parseFilter('{"field":"x"}').field, "x");
  assert.equal(parseFilter("{not json"), null);
  assert.equal(parseFilter(""), null);
});

test("a refusal's loc points at the node it refused", () => {
  assert.equal(errorPathOf({ errors: [{ loc: ["query", "filter", "and", 1] }] }), "and/1");
  assert.equal(errorPathOf({ errors: [{ loc: ["query", "filter"] }] }), "root");
  assert.equal(errorPathOf({ errors: [{ loc: ["body", "data"] }] }), null);
  assert.equal(errorPathOf(null), null);
});

test("the leaves of a tree, in order, however deep", () => {
  const a = { field: "a", op: "eq", value: 1 }, b = { field: "b", op: "gt", value: 2 }, c = { field: "c", op: "is_null" };
  assert.deepEqual(leavesOf({ and: [a, { or: [b, { and: [c] }] }] }), [a, b, c]);
  assert.deepEqual(leavesOf(a), [a]);
  assert.deepEqual(leavesOf(null), []);
  assert.deepEqual(leavesOf({ or: [] }), []);
});
