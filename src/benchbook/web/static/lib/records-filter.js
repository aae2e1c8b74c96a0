// The records table's filter builder: it edits the API's whole filter tree (docs/filters.md):
// and/or groups, nested, of leaves `{field, op, value, schema?}`, shown as chips that can be edited
// and removed. The field catalogue and the tree's pure helpers are in filter-tree.js.
import { html, useState } from "./html.js";
import { Modal } from "./ui.js";
import { ALL_OPS, OP_LABELS, asRoot, compact, describeLeaf, fieldLabel, isGroup, kindOf, leafChoices, pathKinds,
  replaceAt } from "./filter-tree.js";

// The pure helpers live in filter-tree.js; importers of this module keep finding them here.
export { BASE_COLUMNS, BASE_LABELS, OP_LABELS, catalogue, leafChoices, describeLeaf, asRoot, compact, parseFilter,
  errorPathOf } from "./filter-tree.js";

// ---------------------------------------------------------------- leaf editor
function valueText(leaf) {
  if (!leaf || leaf.value === undefined || leaf.value === null) return "";
  return Array.isArray(leaf.value) ? leaf.value.join(", ") : String(leaf.value);
}

export function LeafEditor({ cat, types, leaf, group, onSave, onClose }) {
  const choices = leafChoices(cat);
  const keyOf = (schema, field) => `${schema || ""}::${field}`;
  const first = choices[0].fields[0];
  const [key, setKey] = useState(leaf ? keyOf(leaf.schema, leaf.field) : keyOf(undefined, first && first.name));
  const [schemaName, fieldName] = key.split("::");
  const chosenGroup = choices.find((g) => (g.schema || "") === schemaName) || choices[0];
  const field = chosenGroup.fields.find((f) => f.name === fieldName);
  const type = field && types.find((t) => t.name === field.type);
  const ops = type ? type.operators : ALL_OPS;
  const [op, setOp] = useState(leaf ? leaf.op : "eq");
  const [text, setText] = useState(valueText(leaf));
  const [isNull, setIsNull] = useState(leaf && leaf.op === "is_null" ? String(leaf.value !== false) : "true");
  const chosenOp = ops.includes(op) ? op : ops[0];
  const choicesOfField = field && field.restrictions && Array.isArray(field.restrictions.choices) ? field.restrictions.choices : null;
  const listId = "leaf-values";
  const submit = (e) => {
    e.preventDefault();
    const out = { field: fieldName, op: chosenOp };
    if (schemaName) out.schema = schemaName;
    if (chosenOp === "is_null") out.value = isNull === "true";
    else if (chosenOp === "in") out.value = text.split(",").map((s) => s.trim()).filter((s) => s !== "");
    else out.value = text;
    onSave(out);
  };
  return html`<${Modal} title=${leaf ? "Edit condition" : group ? `First condition of the new ${group === "or" ? "any-of" : "all-of"} group` : "Add condition"} onClose=${onClose}>
    <form class="dialog-body leaf-editor" onSubmit=${submit}>
      <div class="field"><label for="leaf-field">Field</label>
        <select id="leaf-field" value=${key} onChange=${(e) => setKey(e.target.value)}>
          ${choices.map((g) => html`<optgroup label=${g.label}>
            ${g.fields.map((f) => html`<option value=${keyOf(g.schema, f.name)}>${fieldLabel(f)}</option>`)}</optgroup>`)}
        </select>
        <small class="hint">${schemaName ? (cat.ancestors.some((a) => a.name === schemaName)
          ? `Tests the ${schemaName} record above each row.` : `Matches rows having any ${schemaName} below them that passes.`)
          : "The row's own field, else the one it inherits."}${field ? ` Type: ${field.type}.` : ""}</small>
      </div>
      <div class="field"><label for="leaf-op">Operator</label>
        <select id="leaf-op" value=${chosenOp} onChange=${(e) => setOp(e.target.value)}>
          ${ops.map((o) => html`<option value=${o}>${OP_LABELS[o] || o}</option>`)}
        </select></div>
      ${chosenOp === "is_null" ? html`<div class="field"><label for="leaf-null">Value</label>
          <select id="leaf-null" value=${isNull} onChange=${(e) => setIsNull(e.target.value)}>
            <option value="true">has no value</option><option value="false">has a value</option></select></div>`
        : html`<div class="field"><label for="leaf-value">Value</label>
          <input id="leaf-value" value=${text} onInput=${(e) => setText(e.target.value)} list=${choicesOfField ? listId : undefined}
            aria-describedby="leaf-value-hint" autofocus />
          ${choicesOfField ? html`<datalist id=${listId}>${choicesOfField.map((c) => html`<option value=${c} />`)}</datalist>` : null}
          <small class="hint" id="leaf-value-hint">${chosenOp === "in" ? "Several values, separated by commas." :
            field && field.type === "boolean" ? "true or false." : field && field.type === "date" ? "YYYY-MM-DD." : "The server checks the value."}</small></div>`}
      <footer class="dialog-foot">
        <button type="button" onClick=${onClose}>Cancel</button>
        <button type="submit" class="primary">${leaf ? "Apply" : "Add condition"}</button>
      </footer>
    </form>
  <//>`;
}

// ---------------------------------------------------------------- the builder
// `tree` is the API's filter (or null); `onChange(newTree or null)`; `errorPath` ("and/1/or/0"),
// from a 422's loc, marks the chip or group the server refused.
export function FilterBuilder({ cat, types, tree, onChange, errorPath }) {
  const [editing, setEditing] = useState(null); // {path, leaf?, add: true?}
  const root = asRoot(tree);
  const commit = (next) => onChange(compact(next));
  const save = (leaf) => {
    const { path, add, group } = editing;
    setEditing(null);
    commit(replaceAt(root, path, (node) => {
      if (add) { const k = kindOf(node); return { [k]: [...node[k], group ? { [group]: [leaf] } : leaf] }; }
      return leaf;
    }));
  };
  const renderGroup = (group, path, depth) => {
    const k = kindOf(group);
    const pathText = path.length ? [kindOf(root), ...pathKinds(root, path)].join("/") : kindOf(root);
    return html`<div class=${"filter-group" + (depth ? " nested" : "") + (errorPath === pathText ? " refused" : "")}
        role="group" aria-label=${depth ? `group: ${k === "and" ? "all of" : "any of"}` : "filter"}>
      <label class="group-kind">${depth ? "" : "Rows matching "}
        <select aria-label=${depth ? "nested group kind" : "match all or any"} value=${k}
          onChange=${(e) => commit(replaceAt(root, path, (n) => ({ [e.target.value]: n[kindOf(n)] })))}>
          <option value="and">all of</option><option value="or">any of</option></select></label>
      <ul class="chips">
        ${group[k].map((node, i) => {
          const p = [...path, i];
          const nodePath = [kindOf(root), ...pathKinds(root, p)].join("/");
          if (isGroup(node)) return html`<li key=${i}>${renderGroup(node, p, depth + 1)}</li>`;
          const text = describeLeaf(cat, node);
          return html`<li key=${i} class=${"chip filter-chip" + (errorPath === nodePath ? " refused" : "")} data-testid="filter-chip">
            <button type="button" class="link" aria-label=${"Edit condition " + text}
              onClick=${() => setEditing({ path: p, leaf: node })}>${text}</button>
            <button type="button" class="icon" aria-label=${"Remove condition " + text}
              onClick=${() => commit(replaceAt(root, p, () => null))}>×</button></li>`;
        })}
      </ul>
      <span class="group-actions">
        <button type="button" onClick=${() => setEditing({ path, add: true })}>${depth ? "Add to group" : "Add condition"}</button>
        <button type="button" onClick=${() => setEditing({ path, add: true, group: k === "and" ? "or" : "and" })}
          title="A nested group, starting with its first condition">Add ${k === "and" ? "an any-of" : "an all-of"} group</button>
        ${depth ? html`<button type="button" class="link" onClick=${() => commit(replaceAt(root, path, () => null))}>Remove group</button>` : null}
        ${!depth && group[k].length ? html`<button type="button" class="link" onClick=${() => onChange(null)}>Clear filter</button>` : null}
      </span>
    </div>`;
  };
  return html`<div class="filter-builder">
    ${renderGroup(root, [], 0)}
    ${editing ? html`<${LeafEditor} cat=${cat} types=${types} leaf=${editing.leaf} group=${editing.group} onSave=${save} onClose=${() => setEditing(null)} />` : null}
  </div>`;
}

