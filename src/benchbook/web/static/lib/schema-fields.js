// The field form of the schema editor: name, label, type, required, the restrictions the type
// takes (from GET /schemas/field-types) and a default; the API's 422 shown next to the control
// that caused it (its `loc` names the restriction).
import { html, useState } from "./html.js";
import { Field } from "./ui.js";
import { FIELD_RULE, nameError, nameFromWords } from "./names.js";

const RESTRICTION = {
  choices: { label: "Choices", hint: "Comma-separated allowed values.", list: true },
  max_length: { label: "Maximum length", number: true },
  min: { label: "Minimum" }, max: { label: "Maximum" },
  unit: { label: "Unit", hint: "Shown with the values, e.g. mm or g." },
  timezone: { label: "Timezone", hint: "IANA name, e.g. Europe/Berlin." },
  accept: { label: "Accepted file types", hint: "Comma-separated, e.g. image/png, .csv", list: true },
  max_size: { label: "Maximum size (bytes)", number: true },
  schema: { label: "Target schema", schemaPick: true },
};

const NUMERIC = new Set(["integer", "float"]);

export function restrictionsText(field) {
  const out = {};
  for (const [k, v] of Object.entries(field.restrictions || {})) out[k] = Array.isArray(v) ? v.join(", ") : String(v);
  return out;
}

function parseRestrictions(type, text) {
  const out = {};
  for (const [k, raw] of Object.entries(text)) {
    if (raw === undefined || raw === "") continue;
    const spec = RESTRICTION[k] || {};
    if (spec.list) out[k] = raw.split(",").map((s) => s.trim()).filter(Boolean);
    else if (spec.number || ((k === "min" || k === "max") && NUMERIC.has(type))) out[k] = Number.isFinite(Number(raw)) ? Number(raw) : raw;
    else out[k] = raw;
  }
  return out;
}

// `field` null: a new field. onSave(body) returns the API's promise.
export function FieldForm({ field, types, schemas, onSave, onCancel, error }) {
  const [form, setForm] = useState({
    name: field ? field.name : "", label: field ? field.label || "" : "", type: field ? field.type : "string",
    required: field ? !!field.required : false, restrictions: field ? restrictionsText(field) : {},
    default: field && field.default !== null && field.default !== undefined ? JSON.stringify(field.default) : "",
  });
  const type = types.find((t) => t.name === form.type);
  const errors = error && error.fieldErrors ? error.fieldErrors() : {};
  const set = (k) => (e) => setForm({ ...form, [k]: e.target.type === "checkbox" ? e.target.checked : e.target.value });
  const setR = (k) => (e) => setForm({ ...form, restrictions: { ...form.restrictions, [k]: e.target.value } });
  // A reference's target is never left blank: it starts on the first schema, one the user sees chosen.
  const withTarget = (r) => (r.schema || !schemas.length ? r : { ...r, schema: schemas[0].name });
  // The refusal is shown once: next to the control it names, else under the form.
  const shown = new Set(Object.keys(errors).filter((k) => k && (["name", "rename", "label", "type", "default", "restrictions"].includes(k)
    || (type && type.restrictions.includes(k)))));
  // words typed as the name make one ("Body mass (g)" → body_mass_g), and the label of a new field
  const named = nameFromWords(form.name, form.label.trim() || (field ? field.label || "" : ""), "field");
  const submit = (e) => {
    e.preventDefault();
    let def;
    if (form.default !== "") { try { def = JSON.parse(form.default); } catch { def = form.default; } }
    const restrictions = parseRestrictions(form.type, Object.fromEntries(Object.entries(withTarget(form.restrictions))
      .filter(([k]) => (type ? type.restrictions : []).includes(k))));
    const body = field
      ? { ...(named.name !== field.name ? { rename: named.name } : {}), label: form.label || null, required: form.required, restrictions,
        ...(form.default !== "" ? { default: def } : {}) }
      : { name: named.name, label: named.label || undefined, type: form.type, required: form.required, restrictions,
        ...(form.default !== "" ? { default: def } : {}) };
    onSave(body);
  };
  return html`<form class="field-form card" onSubmit=${submit} aria-label=${field ? `Edit field ${field.name}` : "New field"}>
    <div class="form-row">
      <${Field} label="Field name" error=${nameError(errors.name || errors.rename, FIELD_RULE)}
        hint=${named.derived ? `Saved as “${named.name}”${field || form.label.trim() ? "" : `, labelled “${named.label}”`}.` : undefined}>
        ${(id, d) => html`<input id=${id} aria-describedby=${d} required value=${form.name} onInput=${set("name")} />`}<//>
      <${Field} label="Field label" error=${errors.label}>${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.label} onInput=${set("label")} />`}<//>
      <${Field} label="Type" error=${errors.type} hint=${type ? type.description : undefined}>${(id, d) => html`<select id=${id} aria-describedby=${d}
        value=${form.type} disabled=${!!field} onChange=${set("type")}>${types.map((t) => html`<option value=${t.name}>${t.label} (${t.name})</option>`)}</select>`}<//>
    </div>
    <label class="check"><input type="checkbox" checked=${form.required} onChange=${set("required")} /> Required</label>
    ${type && type.restrictions.length ? html`<fieldset class="field"><legend>Restrictions</legend><div class="form-row">
      ${type.restrictions.map((k) => { const spec = RESTRICTION[k] || { label: k }; return html`<${Field} label=${spec.label} hint=${spec.hint} error=${errors[k]}>
        ${(id, d) => spec.schemaPick ? html`<select id=${id} aria-describedby=${d} value=${withTarget(form.restrictions).schema || ""} onChange=${setR(k)}>
            ${schemas.map((s) => html`<option value=${s.name}>${s.label && s.label !== s.name ? `${s.label} (${s.name})` : s.name}</option>`)}</select>`
          : html`<input id=${id} aria-describedby=${d} value=${form.restrictions[k] || ""} onInput=${setR(k)} />`}<//>`; })}
    </div>${errors.restrictions ? html`<small class="field-error" role="alert">${errors.restrictions}</small>` : null}</fieldset>` : null}
    <${Field} label="Default value" hint="JSON or plain text; empty: no default." error=${errors.default}>${(id, d) => html`<input id=${id} aria-describedby=${d}
      value=${form.default} onInput=${set("default")} />`}<//>
    ${error && !shown.size ? html`<p class="field-error" role="alert">${error.message}</p>` : null}
    <div class="toolbar"><button type="submit" class="primary">${field ? "Save field" : "Add field"}</button>
      <button type="button" onClick=${onCancel}>Cancel</button></div>
  </form>`;
}
