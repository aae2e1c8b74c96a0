// Audit entries shown as field changes side by side (before | after), shared by the record page,
// the history feed and an entry's page. An entry is the API's AuditLogResponse; its lines name
// what changed (the record's natural name, schema and collection), small edits say before → after
// in the line, and references and files read by name (`value_labels`).
import { html } from "./html.js";
import { href, seg } from "./router.js";
import { formatValue, formatTime } from "./ui.js";

const LINKED = ["reference", "reference_list", "file", "file_list"];

// A change's value as a person reads it: a reference by its record's name and a file by its
// name (the entry's `value_labels`), the rest as formatValue shows it.
export function valueText(value, dtype, labels = {}) {
  if (LINKED.includes(dtype) && value !== null && value !== undefined) {
    return [].concat(value).map((v) => labels[v] || (typeof v === "string" && v.length > 12 ? `${v.slice(0, 8)}…` : v)).join(", ");
  }
  return formatValue(value, dtype);
}

// What an entry is about, in words: "penguin Adelie-1 in penguins", "schema sample", "collection lab".
export function subjectOf(entry) {
  const data = entry.new_data || entry.old_data || {};
  if (entry.entity_type === "record") {
    const name = data.natural_name || `${entry.entity_id.slice(-8)}`;
    return `${data.schema_name ? data.schema_name + " " : "record "}${name}${data.collection ? ` in ${data.collection}` : ""}`;
  }
  const kind = entry.entity_type === "dataset" ? "collection" : entry.entity_type;
  return `${kind} ${data.label || data.name || entry.entity_id.slice(-8)}`;
}

export function Changes({ entry }) {
  const changes = entry.changes || [];
  if (!changes.length) {
    const data = entry.new_data || entry.old_data;
    return data ? html`<p class="muted">${entry.entity_type} ${data.name || entry.entity_id}</p>` : null;
  }
  return html`<div class="diff" role="table" aria-label="field changes">
    <div role="row" class="diff-head"><span role="columnheader">Field</span><span role="columnheader">Before</span>
      <span role="columnheader">After</span></div>
    ${changes.map((c) => html`<div role="row" class="diff-row">
      <span role="cell" class="field-name">${c.label || c.name || c.field}${c.deleted ? " (deleted field)" : ""}</span>
      <span role="cell" class="before">${valueText(c.before, c.dtype, entry.value_labels) || "—"}</span>
      <span role="cell" class="after">${valueText(c.after, c.dtype, entry.value_labels) || "—"}</span></div>`)}
  </div>`;
}

// A small edit in the summary line itself: "Tag: — → Ade-2009" for an update of one or two fields.
function small(entry) {
  const changes = entry.changes || [];
  if (entry.action !== "update" || !changes.length || changes.length > 2) return "";
  return ": " + changes.map((c) => `${c.label || c.name || c.field} ${valueText(c.before, c.dtype, entry.value_labels) || "—"} → ${
    valueText(c.after, c.dtype, entry.value_labels) || "—"}`).join("; ");
}

export function EntryLine({ entry, open = false }) {
  return html`<details class="entry card" open=${open}>
    <summary><span class=${"badge " + entry.action}>${entry.action}</span>
      ${" "}<strong>${subjectOf(entry)}</strong>${small(entry)} · <time datetime=${entry.timestamp}>${formatTime(entry.timestamp)}</time>
      ${entry.actor ? html` · ${entry.actor}` : null}</summary>
    <${Changes} entry=${entry} />
    <p><a href=${href("/history/entry/" + seg(entry.id))}>Open this entry (revert it)</a></p>
  </details>`;
}

export function EntryList({ entries }) {
  if (!entries.length) return html`<p class="muted">No history yet.</p>`;
  return html`<div class="entries">${entries.map((e, i) => html`<${EntryLine} key=${e.id} entry=${e} open=${i === 0} />`)}</div>`;
}
