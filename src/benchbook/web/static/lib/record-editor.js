// The record's values as a form: one control per live field of its schema, by type, with the
// API's 422 message next to the field it names. `toValue` turns a control's text into what the
// API takes; text that is not a number stays text, so the API's own message says why.
import { html, useEffect, useRef, useState } from "./html.js";
import { get, enc } from "./api.js";
import { Field, formatBytes, formatValue, notify } from "./ui.js";
import { counted } from "./counting.js";
import { href, seg } from "./router.js";
import { upload } from "./status.js";

export function toValue(field, raw) {
  if (raw === "" || raw === null || raw === undefined) return null;
  switch (field.type) {
    case "integer": case "float": {
      const n = Number(raw);
      return Number.isFinite(n) && String(raw).trim() !== "" ? n : raw;
    }
    case "boolean": return raw === "true" ? true : raw === "false" ? false : raw;
    case "tags": return String(raw).split(",").map((s) => s.trim()).filter(Boolean);
    case "reference_list": case "file_list": return Array.isArray(raw) ? raw : String(raw).split(",").map((s) => s.trim()).filter(Boolean);
    case "json": try { return JSON.parse(raw); } catch { return raw; }
    default: return raw;
  }
}

export function toText(field, value) {
  if (value === null || value === undefined) return "";
  if (field.type === "boolean") return value ? "true" : "false";
  if (Array.isArray(value)) return value.join(", ");
  if (field.type === "json" || typeof value === "object") return JSON.stringify(value);
  return String(value);
}

// Type-ahead: the records matching what is typed (by natural name, of the field's target
// schema, that this collection may reference: `reachable_from`) are listed as the user types;
// Enter or Find asks at once. Escape closes the list of matches (then clears the text) and stops
// there, so that the record form around it (pages/record.js) does not cancel the edit.
const TYPE_AHEAD_MS = 200;

function ReferencePicker({ id, describedBy, field, value, label, collection, onChange }) {
  const [q, setQ] = useState("");
  const [options, setOptions] = useState(null);
  const [error, setError] = useState(null);
  const asked = useRef(0);
  const search = async (text) => {
    const mine = ++asked.current;  // only the newest answer is shown
    setError(null);
    try {
      const found = await get("/records", { schema: field.restrictions && field.restrictions.schema, search: text || undefined,
        reachable_from: collection, limit: 20 });
      if (mine === asked.current) setOptions(found);
    } catch (e) { if (mine === asked.current) setError(e); }
  };
  // The type-ahead's pending ask: Enter, Find and Escape cancel it, so that it cannot open the
  // list again after Escape closed it (on a busy machine it fired after the Escape).
  const pending = useRef(null);
  const cancelPending = () => { clearTimeout(pending.current); pending.current = null; };
  useEffect(() => {
    if (!q.trim()) return undefined;
    pending.current = setTimeout(() => { pending.current = null; search(q); }, TYPE_AHEAD_MS);
    return cancelPending;
  }, [q]);
  const askNow = () => { cancelPending(); search(q); };
  const onKeyDown = (e) => {
    if (e.key !== "Escape" || e.defaultPrevented || (!options && !error && !q)) return;
    e.preventDefault();
    cancelPending();
    if (options || error) { asked.current += 1; setOptions(null); setError(null); } else setQ("");
  };
  return html`<div class="ref-picker" onKeyDown=${onKeyDown}>
    <p class="muted">Now: ${!value ? "none" : value.length === 26 ? html`<a href=${href("/r/" + seg(value))}>${label || value}</a>`
      : html`<span>${value}</span> (a key or name: the record it names is linked when saved)`}</p>
    <div class="toolbar">
      <input id=${id} aria-describedby=${describedBy} type="search" placeholder="Type a name to find a record" value=${q}
        autocomplete="off" onInput=${(e) => setQ(e.target.value)} onKeyDown=${(e) => { if (e.key === "Enter") { e.preventDefault(); askNow(); } }} />
      <button type="button" onClick=${askNow}>Find</button>
      ${q.trim() ? html`<button type="button" title="Save resolves it by the target's key, natural name or id (docs/import.md)"
        onClick=${() => { onChange(q.trim()); setOptions(null); }}>Use as typed</button>` : null}
      ${value ? html`<button type="button" onClick=${() => onChange(null)}>Clear</button>` : null}
    </div>
    ${error ? html`<p class="error" role="alert">${error.message}</p>` : null}
    ${options ? html`<ul class="picker-options" aria-label=${"records for " + field.name}>
      ${options.length ? options.map((o) => html`<li><button type="button" class="link" onClick=${() => { onChange(o.id, o.natural_name); setOptions(null); setQ(""); }}>
        ${o.natural_name || o.id}</button> <span class="muted">${o.schema_name}${o.collection ? " · " + o.collection : ""}</span></li>`)
        : html`<li class="muted">No record found.</li>`}</ul>` : null}
  </div>`;
}

// `onBusy(+1)` when an upload starts and `onBusy(-1)` when it ends, so that the form can wait for
// it. While it uploads, a bar shows how far; once uploaded, the file's name and size.
function FileInput({ id, describedBy, field, onUploaded, onError, onBusy }) {
  const [sent, setSent] = useState(null);  // {loaded, total} while uploading
  const [picked, setPicked] = useState(null);  // {name, size} once uploaded
  const onPick = async (e) => {
    const file = e.target.files && e.target.files[0];
    if (!file) return;
    const form = new FormData();
    form.append("file", file, file.name);
    setSent({ loaded: 0, total: file.size });
    onBusy(1);
    try {
      onUploaded((await upload("/files", form, file.name, (loaded, total) => setSent({ loaded, total }))).sha256);
      setPicked({ name: file.name, size: file.size });
    } catch (error) { onError(error); } finally { setSent(null); onBusy(-1); }
  };
  return html`<div class="file-input"><input id=${id} aria-describedby=${describedBy} type="file" disabled=${!!sent} onChange=${onPick}
    accept=${field.restrictions && field.restrictions.accept ? [].concat(field.restrictions.accept).join(",") : undefined} />
    ${sent ? html`<progress max=${sent.total || 1} value=${sent.loaded} aria-label=${`Uploading for ${field.label || field.name}`}></progress>` : null}
    ${picked && !sent ? html`<p class="muted" data-testid="uploaded">Uploaded ${picked.name} (${formatBytes(picked.size)})</p>` : null}</div>`;
}

// A stored file's name and size: what the record already says (`known`, its `file_labels`), else
// asked (GET /files/{sha256}/info, for a file just uploaded); the start of its hash until then.
function FileName({ sha256, known }) {
  const [info, setInfo] = useState(known || null);
  useEffect(() => {
    if (known) { setInfo(known); return undefined; }
    const ask = new AbortController();
    get(`/files/${enc(sha256)}/info`, {}, { signal: ask.signal }).then(setInfo, () => {});
    return () => ask.abort();
  }, [sha256, known]);
  return info ? html`<span>${info.filename || "a file"} (${formatBytes(info.size)})</span>` : html`<span>${sha256.slice(0, 12)}…</span>`;
}

// One field's control; `draft[field.name]` holds its text (or value for references and files).
// `onUploading(delta)` counts the file uploads in progress (+1 as one starts, -1 as it ends).
export function FieldControl({ field, draft, setDraft, error, record, labels, onUploading = () => {} }) {
  const r = field.restrictions || {};
  const unit = r.unit ? ` (${r.unit})` : "";
  const label = `${field.label || field.name}${unit}${field.required ? " *" : ""}`;
  const value = draft[field.name];
  const set = (v) => setDraft((d) => ({ ...d, [field.name]: v }));  // functional: two uploads may finish together
  const hint = [r.min !== undefined ? `min ${r.min}` : null, r.max !== undefined ? `max ${r.max}` : null,
    r.max_length ? `at most ${counted(r.max_length, "character")}` : null,
    ["tags", "file_list", "reference_list"].includes(field.type) ? "comma-separated" : null].filter(Boolean).join(", ") || undefined;
  return html`<${Field} label=${label} error=${error} hint=${hint}>${(id, d) => {
    if (r.choices && field.type === "string") {
      return html`<select id=${id} aria-describedby=${d} value=${value ?? ""} onChange=${(e) => set(e.target.value)}>
        <option value="">—</option>${r.choices.map((c) => html`<option value=${c}>${c}</option>`)}</select>`;
    }
    switch (field.type) {
      case "boolean":
        return html`<select id=${id} aria-describedby=${d} value=${value ?? ""} onChange=${(e) => set(e.target.value)}>
          <option value="">—</option><option value="true">yes</option><option value="false">no</option></select>`;
      case "integer": case "float":
        return html`<input id=${id} aria-describedby=${d} inputmode="decimal" value=${value ?? ""} onInput=${(e) => set(e.target.value)} />`;
      case "date":
        return html`<input id=${id} aria-describedby=${d} type="date" value=${value ?? ""} onInput=${(e) => set(e.target.value)} />`;
      case "json":
        return html`<textarea id=${id} aria-describedby=${d} class="code" rows="4" value=${value ?? ""} onInput=${(e) => set(e.target.value)}></textarea>`;
      case "reference":
        return html`<${ReferencePicker} id=${id} describedBy=${d} field=${field} value=${value} collection=${record.collection}
          label=${labels[value] || (record.reference_labels || {})[value]} onChange=${(v, name) => { if (name) labels[v] = name; set(v); }} />`;
      case "file":
        return html`<div>${value ? html`<p class="muted">Now: <${FileName} sha256=${String(value)} known=${(record.file_labels || {})[value]} /></p>` : null}
          <${FileInput} id=${id} describedBy=${d} field=${field} onUploaded=${set} onBusy=${onUploading}
            onError=${(e) => notify(`Upload of a file for ${field.name} failed: ${e.message}`, "error")} /></div>`;
      default:
        return html`<input id=${id} aria-describedby=${d} value=${value ?? ""} onInput=${(e) => set(e.target.value)} />`;
    }
  }}<//>`;
}

// The read-only value of one field, with reference labels as links.
export function ShowValue({ field, value, record }) {
  if (value === null || value === undefined || (Array.isArray(value) && !value.length)) return html`<span class="muted">—</span>`;
  if (field.type === "reference" || field.type === "reference_list") {
    const labels = record.reference_labels || {};
    return html`${[].concat(value).map((id, i) => html`${i ? ", " : ""}<a href=${href("/r/" + seg(id))}>${labels[id] || id}</a>`)}`;
  }
  if (field.type === "file" || field.type === "file_list") {  // by name and size, never the hash
    const files = record.file_labels || {};
    return html`${[].concat(value).map((sha, i) => html`${i ? ", " : ""}${files[sha]
      ? `${files[sha].filename} (${formatBytes(files[sha].size)})` : html`<span class="muted">a file not in the store</span>`}`)}`;
  }
  if (field.type === "url") return html`<a href=${value} rel="noopener noreferrer">${value}</a>`;
  const unit = field.restrictions && field.restrictions.unit;
  return html`${formatValue(value, field.type)}${unit ? ` ${unit}` : ""}`;
}
