// "New record": a form built from the schema's own fields (POST /collections/{name}/records) with
// the same controls as the record page's Edit (lib/record-editor.js: the type-ahead reference
// picker, file upload with its progress), a parent picker when the schema has a parent schema,
// and the API's messages next to the field they name.
import { html, useRef, useState } from "./html.js";
import { FieldControl, toValue } from "./record-editor.js";
import { get, post } from "./api.js";
import { seg } from "./router.js";
import { useLoad, useAction, ErrorBox, Field, Modal } from "./ui.js";

function ParentPicker({ collection, parentSchema, value, onChange, error }) {
  const [q, setQ] = useState("");
  const found = useLoad((signal) => get(`/collections/${seg(collection)}/records`,
    { schema: parentSchema, search: q || undefined, limit: 50, sort: ["natural_name"] }, { signal }), [collection, parentSchema, q]);
  return html`<${Field} label=${`Parent ${parentSchema}`} error=${error} hint="Type to narrow the list.">
    ${(id, d) => html`<div class="parent-picker">
      <input type="search" aria-label=${`Find a ${parentSchema}`} value=${q} onInput=${(e) => setQ(e.target.value)} />
      <select id=${id} aria-describedby=${d} required value=${value || ""} onChange=${(e) => onChange(e.target.value)}>
        <option value="">— choose —</option>
        ${(found.data ? found.data.items : []).map((r) => html`<option value=${r.id}>${r.natural_name || r.id}</option>`)}
      </select></div>`}<//>`;
}

export function NewRecord({ collection, cat, parent, onClose, onDone }) {
  const [draft, setDraft] = useState({});
  const [parentId, setParentId] = useState(parent || "");
  const [uploading, setUploading] = useState(0);
  const labels = useRef({}).current;  // names of the records picked for reference fields
  const parentSchema = cat.schema.parent;
  const action = useAction(() => {
    const data = {};
    for (const f of cat.own) {
      const raw = draft[f.name];
      const v = ["reference", "file"].includes(f.type) ? raw : toValue(f, raw);
      if (v !== null && v !== undefined) data[f.name] = v;
    }
    return post(`/collections/${seg(collection)}/records`, { schema_name: cat.schema.name,
      parent_record_id: parentSchema ? parentId || null : undefined, data });
  });
  const errors = action.error && action.error.fieldErrors ? action.error.fieldErrors() : {};
  const placed = Object.keys(errors).some((k) => k === "parent_record_id" || cat.own.some((f) => f.name === k));
  const record = { collection, reference_labels: {} };
  return html`<${Modal} title=${`New ${cat.schema.label || cat.schema.name}`} onClose=${onClose}>
    <form class="dialog-body" onSubmit=${async (e) => { e.preventDefault(); const r = await action.run(); if (r) onDone(r); }}>
      ${parentSchema ? html`<${ParentPicker} collection=${collection} parentSchema=${parentSchema} value=${parentId}
        onChange=${setParentId} error=${errors.parent_record_id} />` : null}
      ${cat.own.map((f) => html`<${FieldControl} key=${f.name} field=${f} draft=${draft} setDraft=${setDraft} error=${errors[f.name]}
        record=${record} labels=${labels} onUploading=${(n) => setUploading((u) => u + n)} />`)}
      <${ErrorBox} error=${action.error && !placed ? action.error : null} />
      <footer class="dialog-foot"><button type="button" onClick=${onClose}>Cancel</button>
        <button type="submit" class="primary" disabled=${action.busy || uploading > 0}>${action.busy ? "Creating…"
          : uploading ? "Uploading…" : "Create record"}</button></footer>
    </form><//>`;
}
