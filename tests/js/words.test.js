// Names and history words (lib/names.js, lib/history-words.js), without a browser.
import { test } from "node:test";
import assert from "node:assert/strict";
import { nameError, slugOf, viewNameOf, identifierOf, nameFromWords, COLLECTION_RULE, SCHEMA_NAME } from "../../src/benchbook/web/static/lib/names.js";
import { addParts, changeWords, partsWords, story, storyPage } from "../../src/benchbook/web/static/lib/history-words.js";

test("names come from the words typed", () => {
  assert.equal(slugOf("Lab samples 2024"), "lab-samples-2024");
  assert.equal(slugOf("  Épinards & Œufs! "), "epinards-oeufs");
  assert.equal(slugOf("***"), "");
  assert.equal(viewNameOf("Big Gentoo bills"), "big_gentoo_bills");
  assert.equal(viewNameOf("2024 runs"), "view_2024_runs");
  assert.equal(nameError("'x y' does not match '^[A-Za-z0-9]'", COLLECTION_RULE), COLLECTION_RULE);
  assert.equal(nameError("already taken", COLLECTION_RULE), "already taken");
});

test("changes read in words", () => {
  assert.equal(changeWords(1, "record", "update"), "1 record updated");
  assert.equal(changeWords(344, "record", "create"), "344 records created");
  assert.equal(changeWords(2, "dataset", "delete"), "2 collections deleted");
  assert.equal(partsWords([{ count: 2, entity_type: "schema", action: "create" }, { count: 347, entity_type: "record", action: "create" }]),
    "347 records created, 2 schemas created");
});

test("runs of one workflow that follow each other fold into one story item", () => {
  const run = (id, label) => ({ id, kind: "batch", batch: { kind: "workflow", label }, parts: [{ count: 1, entity_type: "record", action: "update" }] });
  const lone = { id: "e", kind: "entry" };
  const items = story([run("a", "tag"), run("b", "tag"), run("c", "tag"), lone, run("d", "tag"), run("f", "other")]);
  assert.equal(items.length, 4);
  assert.deepEqual(items[0].fold.events.map((e) => e.id), ["a", "b", "c"]);
  assert.equal(items[1].event, lone);
  assert.equal(items[2].event.id, "d");  // one run alone stays a line of its own
  assert.equal(items[3].event.id, "f");
  assert.deepEqual(addParts(items[0].fold.events), [{ entity_type: "record", action: "update", count: 3 }]);
});

test("a page of the story ends after its lines, a fold of runs kept whole across reads", () => {
  const run = (id) => ({ id, kind: "batch", batch: { kind: "workflow", label: "tag" }, parts: [] });
  const lone = (id) => ({ id, kind: "entry" });
  const runs = Array.from({ length: 30 }, (_, i) => run(`r${i}`));
  assert.equal(storyPage(runs, 2, false), null);  // the fold may go on: read more
  const whole = storyPage([...runs, lone("x"), lone("y")], 2, false);
  assert.equal(whole.items.length, 2);
  assert.equal(whole.items[0].fold.events.length, 30);
  assert.equal(whole.used, 31);  // the next page starts at "y"
  const capped = storyPage(runs, 2, true);  // the read cap: the fold goes on on the next page
  assert.deepEqual([capped.items.length, capped.used], [1, 30]);
  assert.deepEqual(storyPage([lone("a")], 25, true), { items: [{ event: lone("a"), run: null }], used: 1 });
});

test("schema and field names come from the words typed, which become the label", () => {
  assert.deepEqual(nameFromWords("Tissue sample", "", "schema"), { name: "tissue_sample", label: "Tissue sample", derived: true });
  assert.deepEqual(nameFromWords("Mass (g)", "Body mass", "field"), { name: "mass_g", label: "Body mass", derived: true });
  assert.deepEqual(nameFromWords("2nd read", "", "field"), { name: "field_2nd_read", label: "2nd read", derived: true });
  assert.deepEqual(nameFromWords("bill_mm", "", "field"), { name: "bill_mm", label: "", derived: false });
  assert.deepEqual(nameFromWords("***", "", "field"), { name: "***", label: "***", derived: false });
  assert.equal(identifierOf("x".repeat(80) + " y", "field", 63).length, 63);
  assert.ok(SCHEMA_NAME.test(nameFromWords("Ünïcödé  Probe — 7", "", "schema").name));
});
