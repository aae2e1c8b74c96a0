// "New record": a form built from the schema's own fields (POST /collections/{name}/records),
// with a parent picker when the schema has a parent schema; the API's messages shown next to the
// field they name.
import { html, useState } from "./html.js";
import { get, post } from "./api.js";
import { seg } from "./router.js";
import { useLoad, useAction, ErrorBox, Field, Modal } from "./ui.js";

function convert(field, text) {
  if (text === "" || text === undefined) return undefined;
  switch (field.type) {
    case "integer": case "float": return Number.isNaN(Number(text)) ? text : Number(text);
    case "boolean": return text === "true";
    case "tags": case "file_list": case "reference_list": return text.split(",").map((s) => s.trim()).filter(Boolean);
    default: return text;
  }
}

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
  const [values, setValues] = useState({});
  const [parentId, setParentId] = useState(parent || "");
  const parentSchema = cat.schema.parent;
  const action = useAction(() => {
    const data = {};
    for (const f of cat.own) { const v = convert(f, values[f.name]); if (v !== undefined) data[f.name] = v; }
    return post(`/collections/${seg(collection)}/records`, { schema_name: cat.schema.name,
      parent_record_id: parentSchema ? parentId || null : undefined, data });
  });
  const errors = action.error && action.error.fieldErrors ? action.error.fieldErrors() : {};
  const placed = Object.keys(errors).some((k) => k === "parent_record_id" || cat.own.some((f) => f.name === k));
  const control = (f, id, d) => {
    const set = (e) => setValues({ ...values, [f.name]: e.target.value });
    const choices = f.restrictions && f.restrictions.choices;
    if (f.type === "boolean") return html`<select id=${id} aria-describedby=${d} value=${values[f.name] || ""} onChange=${set}>
      <option value="">—</option><option value="true">yes</option><option value="false">no</option></select>`;
    if (choices && f.type === "string") return html`<select id=${id} aria-describedby=${d} value=${values[f.name] || ""} onChange=${set}>
      <option value="">—</option>${choices.map((c) => html`<option value=${c}>${c}</option>`)}</select>`;
    const type = { integer: "number", float: "number", date: "date", datetime: "datetime-local", url: "url" }[f.type] || "text";
    return html`<input id=${id} aria-describedby=${d} type=${type} step=${f.type === "float" ? "any" : undefined}
      required=${f.required} value=${values[f.name] || ""} onInput=${set} />`;
  };
  return html`<${Modal} title=${`New ${cat.schema.label || cat.schema.name}`} onClose=${onClose}>
    <form class="dialog-body" onSubmit=${async (e) => { e.preventDefault(); const r = await action.run(); if (r) onDone(r); }}>
      ${parentSchema ? html`<${ParentPicker} collection=${collection} parentSchema=${parentSchema} value=${parentId}
        onChange=${setParentId} error=${errors.parent_record_id} />` : null}
      ${cat.own.map((f) => html`<${Field} key=${f.name} label=${(f.label || f.name) + (f.required ? " *" : "")} error=${errors[f.name]}
        hint=${[f.type, f.restrictions && f.restrictions.unit, ["tags", "file_list", "reference_list"].includes(f.type) ? "comma-separated" : null].filter(Boolean).join(" · ")}>
        ${(id, d) => control(f, id, d)}<//>`)}
      <${ErrorBox} error=${action.error && !placed ? action.error : null} />
      <footer class="dialog-foot"><button type="button" onClick=${onClose}>Cancel</button>
        <button type="submit" class="primary" disabled=${action.busy}>${action.busy ? "Creating…" : "Create record"}</button></footer>
    </form><//>`;
}
