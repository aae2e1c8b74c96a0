// Sync's shared pieces (docs/sync.md): a sync row's kind and resolution in plain words, what one
// sync moved in a sentence, the names of the things rows are about, and the record page's notice
// of the open rows a sync left on a record (GET /remote/conflicts?record_id=).
import { html } from "./html.js";
import { get, enc } from "./api.js";
import { href } from "./router.js";
import { useLoad } from "./ui.js";
import { counted, formatCount } from "./counting.js";

export const PARENT = "parent_record_id";

// A row's kind in plain words: "changed on both sides", "refused by the authority", "edited
// here, deleted there" (or the other way round, by what this device attempted).
export function kindWords(row) {
  if (row.kind === "conflict") return "changed on both sides";
  if (row.kind === "rejected") return "refused by the authority";
  if (row.kind === "edit_vs_delete") return row.attempted === "delete" ? "deleted here, edited there" : "edited here, deleted there";
  return row.kind;
}

const RESOLVED = {
  theirs: "kept the authority's version", mine: "kept yours", value: "set to another value",
  edited: "answered by a later edit made here", delete: "deleted", retry: "sent again",
  restore_above: "brought back with your edit",
};

// How a resolved row was answered, in plain words.
export function resolutionWords(row) {
  return RESOLVED[row.resolution] || row.resolution || "resolved";
}

// What one sync moved (SyncSummary), in a short sentence.
export function summaryWords(s) {
  if (!s) return "";
  const parts = [`Sent ${counted(s.pushed, "change")}, received ${counted(s.pulled, "change")}`];
  if (s.conflicts) parts.push(counted(s.conflicts, "new conflict"));
  if (s.rejected) parts.push(counted(s.rejected, "change") + " refused");
  if (s.files_sent || s.files_received) parts.push(`files: ${formatCount(s.files_sent)} sent, ${formatCount(s.files_received)} received`);
  return parts.join(" · ") + ".";
}

// A failed sync call in plain words: what failed and the server's `detail`, no status code.
export function SyncError({ what, error }) {
  if (!error) return null;
  return html`<div class="error-box" role="alert"><strong>${what}:</strong> ${error.message}</div>`;
}

const shortId = (id) => `…${String(id).slice(-8)}`;

// {id: name} for the things `rows` are about (records by their natural name, other things by
// the name their history entry gives), and for the records a move's values name.
export async function namesOf(rows, signal) {
  const names = {};
  const records = new Set();
  const entries = new Map();
  for (const r of rows) {
    if (r.entity_type === "record") records.add(r.entity_id);
    else entries.set(r.entity_id, r.entry_id);
    if (r.field === PARENT) [r.yours, r.theirs, r.base].forEach((v) => v && records.add(v));
  }
  await Promise.all([
    ...[...records].map((id) => get(`/records/${enc(id)}`, {}, { signal }).then(
      (rec) => { names[id] = rec.natural_name || `${rec.schema_name} ${shortId(id)}`; }, () => {})),
    ...[...entries].map(([id, entry]) => get(`/audit/${enc(entry)}`, {}, { signal }).then((e) => {
      const data = e.new_data || e.old_data || {};
      if (data.name || data.label) names[id] = data.label || data.name;
    }, () => {})),
  ]);
  return names;
}

// The name of what a row is about ("S0", "schema sample"), an id's tail when nothing names it.
export function subjectOf(row, names) {
  const name = names[row.entity_id];
  if (row.entity_type === "record") return name || `record ${shortId(row.entity_id)}`;
  return `${row.entity_type} ${name || shortId(row.entity_id)}`;
}

// A warning on the record page when syncs left open rows about the record: what they are about
// and a link to the Conflicts page; nothing at all otherwise (or when the list cannot be read).
export function SyncNotice({ recordId, version }) {
  const state = useLoad((signal) => get("/remote/conflicts", { status: "open", record_id: recordId }, { signal }), [recordId, version]);
  const rows = state.data || [];
  if (!rows.length) return null;
  const about = rows.map((r) => (r.field_label ? `${r.field_label} (${kindWords(r)})` : kindWords(r))).join("; ");
  return html`<div class="warn-box sync-notice" role="status" data-testid="sync-notice">
    <p><strong>Sync left ${counted(rows.length, "open conflict")} on this record:</strong> ${about}.
      ${" "}<a href=${href("/remote/conflicts", { record: recordId })}>Resolve ${rows.length === 1 ? "it" : "them"} on the Conflicts page</a></p>
  </div>`;
}
