// The history in words: what a batch did ("344 records updated"), and runs of one workflow that
// follow each other folded into one story line (issue 37 item 2).
import { counted } from "./counting.js";

const PAST = { create: "created", update: "updated", delete: "deleted", restore: "restored", purge: "purged" };
// An entity type's word where it is not its name.
const NOUN = { dataset: "collection" };

// "1 record updated" / "344 records updated": `count` things of `entityType` that had `action`.
export function changeWords(count, entityType, action) {
  return `${counted(count, NOUN[entityType] || entityType)} ${PAST[action] || action}`;
}

// A batch's parts ([{count, entity_type, action}]) as one phrase, the largest part first.
export function partsWords(parts) {
  return [...(parts || [])].sort((a, b) => b.count - a.count).map((p) => changeWords(p.count, p.entity_type, p.action)).join(", ");
}

// The events of a page as story items: each event alone ({event}), except that workflow-run
// batches of the same workflow that follow each other are one item ({fold: {label, events}}).
export function story(events) {
  const out = [];
  for (const ev of events) {
    const run = ev.kind === "batch" && ev.batch && ev.batch.kind === "workflow" ? ev.batch.label || "" : null;
    const last = out[out.length - 1];
    if (run !== null && last && ((last.fold && last.fold.label === run) || (last.event && last.run === run))) {
      if (last.event) { out[out.length - 1] = { fold: { label: run, events: [last.event, ev] } }; } else last.fold.events.push(ev);
      continue;
    }
    out.push({ event: ev, run });
  }
  return out;
}

const eventsIn = (items) => items.reduce((n, it) => n + (it.fold ? it.fold.events.length : 1), 0);

// A page of the story: its first `lines` story items of `events` (newest first), once the event
// after them is known to start a new item, or when no more events will be read (`last`: the list
// ended, or the read cap was reached). {items, used: how many of `events` they hold}, or null:
// read more (the last item, a fold of runs, may go on in events not read yet).
export function storyPage(events, lines, last) {
  const items = story(events);
  if (items.length > lines) {
    const shown = items.slice(0, lines);
    return { items: shown, used: eventsIn(shown) };
  }
  return last ? { items, used: events.length } : null;
}

// The parts of several batches added up, for a folded line.
export function addParts(events) {
  const sums = new Map();
  for (const ev of events) {
    for (const p of ev.parts || []) {
      const key = `${p.entity_type} ${p.action}`;
      const had = sums.get(key) || { entity_type: p.entity_type, action: p.action, count: 0 };
      had.count += p.count;
      sums.set(key, had);
    }
  }
  return [...sums.values()];
}
