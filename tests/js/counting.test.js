// Counting things in words (lib/counting.js), without a browser.
import { test } from "node:test";
import assert from "node:assert/strict";
import { andList, counted, formatCount, nounFor, pluralOf } from "../../src/benchbook/web/static/lib/counting.js";

test("counts are written as the locale writes them, none as nothing", () => {
  assert.equal(formatCount(0), (0).toLocaleString());
  assert.equal(formatCount(1000), (1000).toLocaleString());
  assert.equal(formatCount("42"), (42).toLocaleString());
  assert.equal(formatCount(null), "");
  assert.equal(formatCount(undefined), "");
});

test("nouns take the English plural", () => {
  assert.equal(pluralOf("box"), "boxes");
  assert.equal(pluralOf("study"), "studies");
  assert.equal(pluralOf("day"), "days");
  assert.equal(pluralOf("match"), "matches");
  assert.equal(pluralOf("record"), "records");
  assert.equal(pluralOf("open conflict"), "open conflicts");  // a phrase: its last word
});

test("a count and its noun", () => {
  assert.equal(counted(0, "record"), "0 records");
  assert.equal(counted(1, "record"), "1 record");
  assert.equal(counted(2, "box"), "2 boxes");
  assert.equal(counted(1000, "record"), `${(1000).toLocaleString()} records`);
  assert.equal(counted(2, "vial", "vial records"), "2 vial records");
  assert.equal(counted(1, "vial", "vial records"), "1 vial");
});

test("the noun alone follows its count", () => {
  assert.equal(nounFor(1, "record"), "record");
  assert.equal(nounFor(0, "record"), "records");
  assert.equal(nounFor(1000, "box"), "boxes");
  assert.equal(nounFor(2, "vial", "vial records"), "vial records");
});

test("lists end with 'and'", () => {
  assert.equal(andList([]), "");
  assert.equal(andList(["a"]), "a");
  assert.equal(andList(["a", "b"]), "a and b");
  assert.equal(andList(["a", "b", "c"]), "a, b and c");
});
