// The schema editor (#/schemas/<name>): label, description and display template (with a live
// preview of natural names on the schema's own records), fields (add, edit, delete, reorder),
// unique keys, its history, and soft delete.
import { html, useState, useEffect } from "../lib/html.js";
import { get, post, patch, put, del, enc } from "../lib/api.js";
import { href, navigate, seg } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, Field, Confirm, notify, useTitle } from "../lib/ui.js";
import { FieldForm } from "../lib/schema-fields.js";

// `{field}` and `{field:.N}` (first N characters) of a display template, filled from `data`.
export function previewName(template, data) {
  return template.replace(/\{([^{}:]+)(?::\.(\d+))?\}/g, (_, name, n) => {
    const value = data[name.trim()];
    const text = value === null || value === undefined ? "" : String(value);
    return n ? text.slice(0, Number(n)) : text;
  });
}

function Details({ schema, onSaved }) {
  const [form, setForm] = useState({ label: schema.label || "", description: schema.description || "",
    display_template: schema.display_template || "" });
  const samples = useLoad((signal) => get("/records", { schema: schema.name, limit: 5 }, { signal }), [schema.name]);
  const save = useAction(() => patch(`/schemas/${enc(schema.name)}`, { label: form.label || null,
    description: form.description || null, display_template: form.display_template || null }));
  const errors = save.error && save.error.fieldErrors ? save.error.fieldErrors() : {};
  const set = (k) => (e) => setForm({ ...form, [k]: e.target.value });
  // A refusal about the fields (a template naming a field not there yet) is stale once they change.
  const fieldNames = schema.fields.filter((f) => !f.deleted_at).map((f) => f.name).join(",");
  useEffect(() => { if (save.error) save.clear(); }, [fieldNames]);
  return html`<form class="card" aria-label="Schema details" onSubmit=${async (e) => { e.preventDefault();
      const s = await save.run(); if (s) { notify("Schema saved", "ok"); onSaved(s); } }}>
    <div class="form-row">
      <${Field} label="Schema label" error=${errors.label}>${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.label} onInput=${set("label")} />`}<//>
      <${Field} label="Display template" error=${errors.display_template} hint="How a record is named, e.g. {species} {year}; {field:.3} keeps 3 characters.">
        ${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.display_template} onInput=${set("display_template")} />`}<//>
    </div>
    <${Field} label="Schema description" error=${errors.description}>${(id, d) => html`<textarea id=${id} aria-describedby=${d} rows="2"
      value=${form.description} onInput=${set("description")}></textarea>`}<//>
    ${samples.data && samples.data.length ? html`<div class="template-preview" aria-live="polite"><strong>Preview</strong> (own fields only):
      <ul class="plain">${samples.data.map((r) => html`<li><span data-testid="preview-name">${form.display_template ? previewName(form.display_template, r.data) : r.id}</span>
        <span class="muted"> · now: ${r.natural_name || "—"}</span></li>`)}</ul></div>` : null}
    <${ErrorBox} error=${save.error && !Object.keys(errors).some(Boolean) ? save.error : null} />
    <button type="submit" class="primary" disabled=${save.busy}>Save details</button>
  </form>`;
}

function Fields({ schema, types, schemas, setSchema }) {
  const [editing, setEditing] = useState(null); // null | "new" | field id
  const [asking, setAsking] = useState(null);
  const save = useAction((body) => editing === "new" ? post(`/schemas/${enc(schema.name)}/fields`, body)
    : patch(`/schemas/${enc(schema.name)}/fields/${enc(editing)}`, body));
  const move = useAction((order) => put(`/schemas/${enc(schema.name)}/fields/reorder`, { order }));
  const live = schema.fields.filter((f) => !f.deleted_at);
  const reload = async () => setSchema(await get(`/schemas/${enc(schema.name)}`));
  const shift = async (i, by) => {
    const order = live.map((f) => f.id);
    [order[i], order[i + by]] = [order[i + by], order[i]];
    const s = await move.run(order);
    if (s) { setSchema(s); notify("Fields reordered", "ok"); }
  };
  return html`<section aria-labelledby="fields-h"><div class="section-head"><h2 id="fields-h">Fields</h2>
      <button type="button" onClick=${() => { save.clear(); setEditing("new"); }}>Add a field</button></div>
    ${editing === "new" ? html`<${FieldForm} field=${null} types=${types} schemas=${schemas} error=${save.error}
      onCancel=${() => setEditing(null)} onSave=${async (b) => { if (await save.run(b)) { setEditing(null); notify("Field added", "ok"); reload(); } }} />` : null}
    <${ErrorBox} error=${move.error} />
    <ol class="fields-list" aria-label="fields">
      ${live.map((f, i) => html`<li key=${f.id} data-field=${f.name}>
        <div class="field-line"><strong>${f.label || f.name}</strong> <code>${f.name}</code> <span class="badge">${f.type}</span>
          ${f.required ? html`<span class="badge">required</span>` : null}
          <span class="muted">${Object.entries(f.restrictions || {}).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join("/") : v}`).join(" · ")}</span>
          <span class="field-actions">
            <button type="button" class="icon" aria-label=${"move " + f.name + " up"} disabled=${i === 0 || move.busy} onClick=${() => shift(i, -1)}>↑</button>
            <button type="button" class="icon" aria-label=${"move " + f.name + " down"} disabled=${i === live.length - 1 || move.busy} onClick=${() => shift(i, 1)}>↓</button>
            <button type="button" onClick=${() => { save.clear(); setEditing(f.id); }}>Edit</button>
            <button type="button" onClick=${() => setAsking(f)}>Delete…</button></span></div>
        ${editing === f.id ? html`<${FieldForm} field=${f} types=${types} schemas=${schemas} error=${save.error}
          onCancel=${() => setEditing(null)} onSave=${async (b) => { if (await save.run(b)) { setEditing(null); notify("Field saved", "ok"); reload(); } }} />` : null}
      </li>`)}
    </ol>
    ${!live.length ? html`<p class="muted">No fields yet: add the first one.</p>` : null}
    ${asking ? html`<${Confirm} title=${`Delete field ${asking.name}?`} danger=${true} confirmLabel="Delete field"
      message="The field is hidden; records keep its values, and restoring the field (Recently deleted) puts them back."
      onClose=${() => setAsking(null)} onConfirm=${async () => { await del(`/schemas/${enc(schema.name)}/fields/${enc(asking.id)}`);
        notify(`Field ${asking.name} deleted`, "ok"); reload(); return true; }} />` : null}
  </section>`;
}

function UniqueKeys({ schema, setSchema }) {
  const [text, setText] = useState((schema.unique_keys || []).map((k) => k.join(", ")).join("\n"));
  const save = useAction(() => put(`/schemas/${enc(schema.name)}/unique-keys`,
    { keys: text.split("\n").map((l) => l.split(",").map((s) => s.trim()).filter(Boolean)).filter((k) => k.length) }));
  return html`<section aria-labelledby="keys-h"><h2 id="keys-h">Unique keys</h2>
    <form onSubmit=${async (e) => { e.preventDefault(); const s = await save.run(); if (s) { setSchema(s); notify("Unique keys saved", "ok"); } }}>
      <${Field} label="Unique keys" hint="One key a line: field names separated by commas; no two live records may share a key's values."
        error=${save.error ? save.error.message : null}>${(id, d) => html`<textarea id=${id} aria-describedby=${d} rows="2" value=${text}
        onInput=${(e) => setText(e.target.value)}></textarea>`}<//>
      <button type="submit">Save unique keys</button>
    </form></section>`;
}

export default function SchemaPage({ params }) {
  const name = params.schema;
  const state = useLoad((signal) => Promise.all([get(`/schemas/${enc(name)}`, {}, { signal }),
    get("/schemas/field-types", {}, { signal }), get("/schemas", {}, { signal })]), [name]);
  const [asking, setAsking] = useState(false);
  useTitle(`Schema ${name}`);
  if (state.loading && !state.data) return html`<${Loading} />`;
  if (state.error && !state.data) return html`<section class="page"><h1>Schema ${name}</h1><${ErrorBox} error=${state.error} onRetry=${state.reload} /></section>`;
  const [schema, types, schemas] = state.data;
  const setSchema = (s) => state.setData([s, types, schemas]);
  return html`<section class="page schema-page">
    <p><a href=${href("/schemas")}>← Schemas</a></p>
    <div class="page-head"><h1>${schema.label || schema.name}</h1>
      <span class="muted"><code>${schema.name}</code>${schema.parent ? html` · child of <a href=${href("/schemas/" + seg(schema.parent))}>${schema.parent}</a>` : ""}</span>
      <div class="actions"><a class="button" href=${href("/history", { schema: schema.name })}>History</a>
        <button type="button" class="danger" onClick=${() => setAsking(true)}>Delete schema…</button></div></div>
    <${Details} key=${schema.name} schema=${schema} onSaved=${setSchema} />
    <${Fields} schema=${schema} types=${types} schemas=${schemas} setSchema=${setSchema} />
    <${UniqueKeys} key=${JSON.stringify(schema.unique_keys)} schema=${schema} setSchema=${setSchema} />
    ${asking ? html`<${Confirm} title=${`Delete schema ${schema.name}?`} danger=${true} confirmLabel="Delete schema"
      message="It goes to Recently deleted, where it can be restored."
      onClose=${() => setAsking(false)} onConfirm=${async () => { await del(`/schemas/${enc(schema.name)}`);
        notify(`Schema ${schema.name} deleted`, "ok"); navigate("/schemas"); return true; }} />` : null}
  </section>`;
}
