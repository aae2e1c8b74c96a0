// Collection settings (#/c/<name>/settings): rename, describe, scope, timezone and the schemas
// its records may have (PATCH /collections/{name}); the API's refusals shown in place (removing
// a schema that has records, making a referenced global collection local); soft delete.
import { html, useState } from "../lib/html.js";
import { get, patch, del, enc } from "../lib/api.js";
import { href, navigate, seg } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, Field, Confirm, notify, useTitle } from "../lib/ui.js";
import { counted } from "../lib/counting.js";

function Settings({ collection, schemas }) {
  const [form, setForm] = useState({ name: collection.name, description: collection.description || "",
    scope: collection.scope || "local", timezone: collection.timezone || "", schemas: collection.schemas || [] });
  const [asking, setAsking] = useState(false);
  const save = useAction(() => patch(`/collections/${enc(collection.id)}`, {
    ...(form.name !== collection.name ? { rename: form.name } : {}), description: form.description || null,
    scope: form.scope, timezone: form.timezone || null, schemas: form.schemas }));
  const errors = save.error && save.error.fieldErrors ? save.error.fieldErrors() : {};
  const set = (k) => (e) => setForm({ ...form, [k]: e.target.value });
  const toggle = (n) => setForm({ ...form, schemas: form.schemas.includes(n) ? form.schemas.filter((s) => s !== n) : [...form.schemas, n] });
  return html`<form aria-label="Collection settings" onSubmit=${async (e) => { e.preventDefault(); const c = await save.run();
      if (c) { notify("Collection saved", "ok"); navigate("/c/" + seg(c.name) + "/settings", {}, { replace: true }); } }}>
    <${Field} label="Collection name" error=${errors.rename || errors.name}>${(id, d) => html`<input id=${id} aria-describedby=${d} required value=${form.name} onInput=${set("name")} />`}<//>
    <${Field} label="Description" error=${errors.description}>${(id, d) => html`<textarea id=${id} aria-describedby=${d} rows="2" value=${form.description} onInput=${set("description")}></textarea>`}<//>
    <div class="form-row">
      <${Field} label="Scope" error=${errors.scope} hint="Global: records in other collections may reference its records.">${(id, d) => html`<select id=${id} aria-describedby=${d}
        value=${form.scope} onChange=${set("scope")}><option value="local">local</option><option value="global">global</option></select>`}<//>
      <${Field} label="Timezone" error=${errors.timezone} hint="IANA name; empty reads offset-less times as UTC.">${(id, d) => html`<input id=${id} aria-describedby=${d}
        value=${form.timezone} onInput=${set("timezone")} />`}<//>
    </div>
    <fieldset class="field"><legend>Schemas its records may have</legend>
      ${schemas.map((s) => html`<label class="check"><input type="checkbox" checked=${form.schemas.includes(s.name)} onChange=${() => toggle(s.name)} />
        ${s.name}${s.parent ? html` <span class="muted">(child of ${s.parent})</span>` : ""}</label>`)}
      ${errors.schemas ? html`<small class="field-error" role="alert">${errors.schemas}</small>` : null}</fieldset>
    <${ErrorBox} error=${save.error && !Object.keys(errors).some(Boolean) ? save.error : null} />
    <div class="toolbar"><button type="submit" class="primary" disabled=${save.busy}>Save settings</button>
      <button type="button" class="danger" onClick=${() => setAsking(true)}>Delete collection…</button></div>
    ${asking ? html`<${Confirm} title=${`Delete collection ${collection.name}?`} danger=${true} confirmLabel="Delete collection"
      message=${`Its ${counted(collection.record_count, "record goes", "records go")} with it to Recently deleted, where the collection can be restored with them.`}
      onClose=${() => setAsking(false)} onConfirm=${async () => { await del(`/collections/${enc(collection.id)}`);
        notify(`Collection ${collection.name} deleted`, "ok"); navigate("/trash"); return true; }} />` : null}
  </form>`;
}

export default function Collection({ params }) {
  const name = params.collection;
  const state = useLoad((signal) => Promise.all([get(`/collections/${enc(name)}`, {}, { signal }), get("/schemas", {}, { signal })]), [name]);
  useTitle(`${name} settings`);
  if (state.loading && !state.data) return html`<${Loading} />`;
  if (state.error && !state.data) return html`<section class="page"><h1>${name}</h1><${ErrorBox} error=${state.error} onRetry=${state.reload} /></section>`;
  const [collection, schemas] = state.data;
  return html`<section class="page collection-settings">
    <p><a href=${href("/c/" + seg(collection.name))}>← ${collection.name}</a></p>
    <div class="page-head"><h1>Settings of ${collection.name}</h1><span class="muted">${counted(collection.record_count, "record")}</span></div>
    <${Settings} key=${collection.id + collection.name} collection=${collection} schemas=${schemas} />
  </section>`;
}
