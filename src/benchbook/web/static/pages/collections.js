// Home: every live collection with its schemas and record count, and a form to create one
// (name, description, scope, timezone, schemas: POST /collections).
import { html, useState } from "../lib/html.js";
import { get, post } from "../lib/api.js";
import { href, navigate, seg } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, Field, Modal, formatCount, useTitle, notify } from "../lib/ui.js";
import { nounFor } from "../lib/counting.js";
import { COLLECTION_NAME, COLLECTION_RULE, nameError, slugOf } from "../lib/names.js";

export function CollectionForm({ schemas, onDone, onClose }) {
  const [form, setForm] = useState({ name: "", description: "", scope: "local", timezone: "", schemas: [] });
  const typed = form.name.trim();
  const name = COLLECTION_NAME.test(typed) ? typed : slugOf(typed) || typed;
  const action = useAction(() => post("/collections", {
    name, description: form.description || null, scope: form.scope,
    timezone: form.timezone || null, schemas: form.schemas }));
  const errors = action.error && action.error.fieldErrors ? action.error.fieldErrors() : {};
  const set = (key) => (e) => setForm({ ...form, [key]: e.target.value });
  const toggle = (name) => setForm({ ...form, schemas: form.schemas.includes(name)
    ? form.schemas.filter((s) => s !== name) : [...form.schemas, name] });
  const submit = async (e) => {
    e.preventDefault();
    const created = await action.run();
    if (created) onDone(created);
  };
  return html`<${Modal} title="New collection" onClose=${onClose}>
    <form class="dialog-body" onSubmit=${submit}>
      <${Field} label="Name" error=${nameError(errors.name, COLLECTION_RULE)}
        hint=${typed && name !== typed ? `Saved as “${name}”. ${COLLECTION_RULE}` : `${COLLECTION_RULE} Unique among collections.`}>
        ${(id, d) => html`<input id=${id} aria-describedby=${d} required value=${form.name} onInput=${set("name")} autofocus />`}<//>
      <${Field} label="Description" error=${errors.description}>
        ${(id, d) => html`<textarea id=${id} aria-describedby=${d} rows="2" value=${form.description} onInput=${set("description")}></textarea>`}<//>
      <div class="form-row">
        <${Field} label="Scope" error=${errors.scope} hint="Global: records in other collections may reference its records.">
          ${(id, d) => html`<select id=${id} aria-describedby=${d} value=${form.scope} onChange=${set("scope")}>
            <option value="local">local</option><option value="global">global</option></select>`}<//>
        <${Field} label="Timezone" error=${errors.timezone} hint="IANA name, e.g. Europe/Berlin; empty reads offset-less times as UTC.">
          ${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.timezone} onInput=${set("timezone")} />`}<//>
      </div>
      <fieldset class="field"><legend>Schemas its records may have</legend>
        ${schemas.length ? schemas.map((s) => html`<label class="check"><input type="checkbox" checked=${form.schemas.includes(s.name)}
          onChange=${() => toggle(s.name)} /> ${s.name}${s.parent_schema ? html` <span class="muted">(child of ${s.parent_schema})</span>` : ""}</label>`)
          : html`<p class="muted">No schemas yet: <a href=${href("/schemas")}>create one</a> first.</p>`}
        ${errors.schemas && html`<small class="field-error" role="alert">${errors.schemas}</small>`}
      </fieldset>
      <${ErrorBox} error=${action.error && !Object.keys(errors).some((k) => k) ? action.error : null} />
      <footer class="dialog-foot">
        <button type="button" onClick=${onClose}>Cancel</button>
        <button type="submit" class="primary" disabled=${action.busy}>${action.busy ? "Creating…" : "Create collection"}</button>
      </footer>
    </form>
  <//>`;
}

export default function Collections() {
  useTitle("Collections");
  const [creating, setCreating] = useState(false);
  const state = useLoad((signal) => Promise.all([get("/collections", {}, { signal }), get("/schemas", {}, { signal })]), []);
  const [collections, schemas] = state.data || [[], []];
  return html`<section class="page">
    <div class="page-head"><h1>Collections</h1>
      <div class="actions"><button class="primary" onClick=${() => setCreating(true)}>New collection</button></div></div>
    ${state.loading && !state.data ? html`<${Loading} />` : null}
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${state.data && !collections.length ? html`<div class="card"><p>This project has no collections yet.</p>
      <p class="muted">Define a <a href=${href("/schemas")}>schema</a> (the kind of record and its fields), then create a
      collection for its records. Or run <code>benchbook demo</code> for a project holding the Palmer penguins.</p></div>` : null}
    <ul class="cards" aria-label="collections">
      ${collections.map((c) => html`<li class="card" key=${c.id}>
        <h2><a href=${href("/c/" + seg(c.name))}>${c.name}</a></h2>
        ${c.description ? html`<p>${c.description}</p>` : null}
        <p class="muted"><span class="count" data-testid="record-count">${formatCount(c.record_count)}</span> ${nounFor(c.record_count, "record")}
          · ${c.scope || "local"}${c.timezone ? ` · ${c.timezone}` : ""}</p>
        <p>${(c.schemas || []).map((s) => html`<a class="chip" href=${href("/c/" + seg(c.name), { schema: s })}>${s}</a> `)}</p>
        <p><a href=${href("/c/" + seg(c.name) + "/settings")}>Settings</a> · <a href=${href("/c/" + seg(c.name) + "/import")}>Import</a></p>
      </li>`)}
    </ul>
    ${creating ? html`<${CollectionForm} schemas=${schemas} onClose=${() => setCreating(false)}
      onDone=${(c) => { setCreating(false); notify(`Created collection ${c.name}`, "ok"); navigate("/c/" + seg(c.name)); }} />` : null}
  </section>`;
}
