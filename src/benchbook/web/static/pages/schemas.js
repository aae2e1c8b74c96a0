// Schemas (#/schemas): every live schema with its parent, fields and the collections that use
// it; a new schema (name, label, parent, description) opens in the editor.
import { html, useState } from "../lib/html.js";
import { get, post } from "../lib/api.js";
import { href, navigate, seg } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, Field, Modal, notify, useTitle, formatCount } from "../lib/ui.js";
import { SCHEMA_RULE, nameError, nameFromWords } from "../lib/names.js";

function NewSchema({ schemas, onClose }) {
  const [form, setForm] = useState({ name: "", label: "", parent: "", description: "" });
  const named = nameFromWords(form.name, form.label.trim(), "schema");  // "Tissue sample" → tissue_sample
  const action = useAction(() => post("/schemas", { name: named.name, label: named.label || undefined,
    parent: form.parent || undefined, description: form.description || undefined, fields: [] }));
  const errors = action.error && action.error.fieldErrors ? action.error.fieldErrors() : {};
  const set = (k) => (e) => setForm({ ...form, [k]: e.target.value });
  return html`<${Modal} title="New schema" onClose=${onClose}>
    <form class="dialog-body" onSubmit=${async (e) => { e.preventDefault(); const s = await action.run();
      if (s) { notify(`Created schema ${s.name}: now add its fields`, "ok"); navigate("/schemas/" + seg(s.name)); } }}>
      <${Field} label="Name" error=${nameError(errors.name, SCHEMA_RULE)} hint=${named.derived
        ? `Saved as “${named.name}”${form.label.trim() ? "" : `, labelled “${named.label}”`}. ${SCHEMA_RULE}`
        : `${SCHEMA_RULE} Used in the API and in imports; words such as “Tissue sample” make one.`}>
        ${(id, d) => html`<input id=${id} aria-describedby=${d} required value=${form.name} onInput=${set("name")} autofocus />`}<//>
      <${Field} label="Label" error=${errors.label} hint="What people see; default: the words typed as the name.">
        ${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.label} onInput=${set("label")} />`}<//>
      <${Field} label="Parent schema" error=${errors.parent} hint="Its records are nested under a record of the parent (study → sample).">
        ${(id, d) => html`<select id=${id} aria-describedby=${d} value=${form.parent} onChange=${set("parent")}>
          <option value="">none (top level)</option>${schemas.map((s) => html`<option value=${s.name}>${s.name}</option>`)}</select>`}<//>
      <${Field} label="Description" error=${errors.description}>
        ${(id, d) => html`<textarea id=${id} aria-describedby=${d} rows="2" value=${form.description} onInput=${set("description")}></textarea>`}<//>
      <${ErrorBox} error=${action.error && !Object.keys(errors).some((k) => ["name", "label", "parent", "description"].includes(k)) ? action.error : null} />
      <footer class="dialog-foot"><button type="button" onClick=${onClose}>Cancel</button>
        <button type="submit" class="primary" disabled=${action.busy}>Create schema</button></footer>
    </form><//>`;
}

export default function Schemas() {
  useTitle("Schemas");
  const [creating, setCreating] = useState(false);
  const state = useLoad((signal) => Promise.all([get("/schemas", {}, { signal }), get("/collections", {}, { signal })]), []);
  const [schemas, collections] = state.data || [[], []];
  const usedBy = (name) => collections.filter((c) => (c.schemas || []).includes(name));
  return html`<section class="page schemas">
    <div class="page-head"><h1>Schemas</h1><div class="actions">
      <button class="primary" onClick=${() => setCreating(true)}>New schema</button></div></div>
    <p class="muted">A schema is a kind of record and its fields. Collections hold records of the schemas they list.</p>
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${state.loading && !state.data ? html`<${Loading} />` : html`<div class="table-wrap"><table class="grid" aria-label="schemas">
      <thead><tr><th scope="col">Schema</th><th scope="col">Label</th><th scope="col">Parent</th><th scope="col" class="num">Fields</th>
        <th scope="col">Collections</th></tr></thead>
      <tbody>${schemas.map((s) => html`<tr><td><a href=${href("/schemas/" + seg(s.name))}>${s.name}</a></td><td>${s.label || ""}</td>
        <td>${s.parent || ""}</td><td class="num">${formatCount((s.fields || []).length)}</td>
        <td>${usedBy(s.name).map((c, i) => html`${i ? ", " : ""}<a href=${href("/c/" + seg(c.name), { schema: s.name })}>${c.name}</a>`)}</td></tr>`)}
      </tbody></table></div>
      ${!schemas.length ? html`<p class="muted">No schemas yet.</p>` : null}`}
    ${creating ? html`<${NewSchema} schemas=${schemas} onClose=${() => setCreating(false)} />` : null}
  </section>`;
}
