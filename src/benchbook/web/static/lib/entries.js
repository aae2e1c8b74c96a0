// Audit entries shown as field changes side by side (before | after), shared by the record page,
// the history feed and an entry's page. An entry is the API's AuditLogResponse.
import { html } from "./html.js";
import { href, seg } from "./router.js";
import { formatValue, formatTime } from "./ui.js";

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
      <span role="cell" class="before">${formatValue(c.before, c.dtype) || "—"}</span>
      <span role="cell" class="after">${formatValue(c.after, c.dtype) || "—"}</span></div>`)}
  </div>`;
}

export function EntryLine({ entry, open = false }) {
  return html`<details class="entry card" open=${open}>
    <summary><span class=${"badge " + entry.action}>${entry.action}</span>
      ${" "}${entry.entity_type} · <time datetime=${entry.timestamp}>${formatTime(entry.timestamp)}</time>
      ${entry.actor ? html` · ${entry.actor}` : null}</summary>
    <${Changes} entry=${entry} />
    <p><a href=${href("/history/entry/" + seg(entry.id))}>Open this entry (revert it)</a></p>
  </details>`;
}

export function EntryList({ entries }) {
  if (!entries.length) return html`<p class="muted">No history yet.</p>`;
  return html`<div class="entries">${entries.map((e, i) => html`<${EntryLine} key=${e.id} entry=${e} open=${i === 0} />`)}</div>`;
}
