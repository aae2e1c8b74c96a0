// The records table's field catalogue and filter builder. The catalogue lists, for one schema of a
// collection, its own fields, the fields it inherits from ancestor schemas (nearest owner wins, as
// the API resolves them), `ref.target` columns through its reference fields, and the fields of
// descendant schemas (for descendant filter leaves). The builder edits the API's whole filter tree
// (docs/filters.md): and/or groups, nested, of leaves `{field, op, value, schema?}`, shown as chips
// that can be edited and removed.
import { html, useState } from "./html.js";
import { Modal } from "./ui.js";

export const BASE_COLUMNS = ["natural_name", "id", "schema_name", "parent_record_id", "created_at", "updated_at"];
export const BASE_LABELS = { natural_name: "Name", id: "Id", schema_name: "Schema", parent_record_id: "Parent",
  created_at: "Created", updated_at: "Updated" };
export const OP_LABELS = { eq: "=", ne: "≠", gt: ">", gte: "≥", lt: "<", lte: "≤", contains: "contains", in: "is one of",
  is_null: "is empty" };
const ALL_OPS = ["eq", "ne", "gt", "gte", "lt", "lte", "contains", "in", "is_null"];

const live = (fields) => (fields || []).filter((f) => !f.deleted_at);
const fieldLabel = (f) => f.label && f.label !== f.name ? `${f.label} (${f.name})` : f.name;

// Everything the table and the filter builder need to know about `schemaName`'s fields.
export function catalogue(schemas, schemaName, collectionSchemas) {
  const byName = Object.fromEntries(schemas.map((s) => [s.name, s]));
  const schema = byName[schemaName];
  if (!schema) return null;
  const own = live(schema.fields);
  const ownNames = new Set(own.map((f) => f.name));
  const ancestors = [];
  for (let p = schema.parent, guard = 0; p && byName[p] && guard < 40; p = byName[p].parent, guard++) ancestors.push(byName[p]);
  const inherited = [];
  const seen = new Set(ownNames);
  for (const a of ancestors) {
    for (const f of live(a.fields)) {
      if (seen.has(f.name)) continue;
      seen.add(f.name);
      inherited.push({ key: f.name, field: f, owner: a.name, sort: `${a.name}.${f.name}`,
        label: `${f.label || f.name} (${a.label || a.name})` });
    }
  }
  const refs = [];
  for (const f of own) {
    if (f.type !== "reference" || !f.restrictions || !byName[f.restrictions.schema]) continue;
    const target = byName[f.restrictions.schema];
    for (const t of live(target.fields)) {
      refs.push({ key: `${f.name}.${t.name}`, field: t, owner: target.name, sort: null,
        label: `${f.label || f.name} → ${t.label || t.name}` });
    }
  }
  const inCollection = (name) => !collectionSchemas || collectionSchemas.includes(name);
  const isBelow = (s) => {
    for (let p = s.parent, guard = 0; p && guard < 40; p = byName[p] && byName[p].parent, guard++) if (p === schemaName) return true;
    return false;
  };
  const descendants = schemas.filter((s) => s.name !== schemaName && isBelow(s) && inCollection(s.name));
  const children = schemas.filter((s) => s.parent === schemaName && inCollection(s.name));
  const columns = {};
  for (const b of BASE_COLUMNS) columns[b] = { key: b, label: BASE_LABELS[b], kind: "base", sort: b };
  for (const f of own) columns[f.name] = { key: f.name, label: f.label || f.name, kind: "own", field: f, sort: f.name };
  for (const c of inherited) columns[c.key] = { ...c, kind: "inherited" };
  for (const c of refs) columns[c.key] = { ...c, kind: "ref" };
  return { schema, own, ancestors, inherited, refs, descendants, children, columns,
    defaultColumns: ["natural_name", ...own.map((f) => f.name)] };
}

// The fields a filter leaf may name: [{group label, schema (undefined for own), fields}].
export function leafChoices(cat) {
  const groups = [{ label: `${cat.schema.label || cat.schema.name} (own and inherited)`, schema: undefined,
    fields: [...cat.own, ...cat.inherited.map((c) => c.field)] }];
  for (const a of cat.ancestors) groups.push({ label: `Ancestor ${a.label || a.name}`, schema: a.name, fields: live(a.fields) });
  for (const d of cat.descendants) groups.push({ label: `Any descendant ${d.label || d.name}`, schema: d.name, fields: live(d.fields) });
  return groups;
}

function findField(cat, leaf) {
  const group = leafChoices(cat).find((g) => g.schema === (leaf.schema || undefined));
  return group ? group.fields.find((f) => f.name === leaf.field) : undefined;
}

export function describeLeaf(cat, leaf) {
  const field = cat && findField(cat, leaf);
  const name = field ? (field.label || field.name) : leaf.field;
  const below = cat && cat.descendants.some((d) => d.name === leaf.schema);
  const where = leaf.schema && leaf.schema !== (cat && cat.schema.name) ? `${below ? "any " : ""}${leaf.schema} › ` : "";
  if (leaf.op === "is_null") return `${where}${name} ${leaf.value === false ? "is not empty" : "is empty"}`;
  const value = Array.isArray(leaf.value) ? leaf.value.join(", ") : String(leaf.value);
  return `${where}${name} ${OP_LABELS[leaf.op] || leaf.op} ${value}`;
}

// ---------------------------------------------------------------- tree helpers
const isGroup = (n) => n && typeof n === "object" && (Array.isArray(n.and) || Array.isArray(n.or));
const kindOf = (g) => (Array.isArray(g.and) ? "and" : "or");

// The stored tree as a root group (a lone leaf becomes an and-group of one).
export function asRoot(tree) {
  if (!tree) return { and: [] };
  return isGroup(tree) ? tree : { and: [tree] };
}
// A root group back to what the API gets: null when empty.
export function compact(root) {
  const prune = (n) => {
    if (!isGroup(n)) return n;
    const k = kindOf(n);
    const items = n[k].map(prune).filter(Boolean);
    return items.length ? { [k]: items } : null;
  };
  return prune(root);
}
export function parseFilter(text) {
  if (!text) return null;
  try { return JSON.parse(text); } catch { return null; }
}

function replaceAt(node, path, fn) {
  if (!path.length) return fn(node);
  const k = kindOf(node);
  const items = node[k].slice();
  const [i, ...rest] = path;
  const changed = replaceAt(items[i], rest, fn);
  if (changed === null) items.splice(i, 1); else items[i] = changed;
  return { [k]: items };
}

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

// "and/1/or/0"-style path parts below the root for the node at index path `p`.
function pathKinds(root, p) {
  const out = [];
  let node = root;
  p.forEach((i, at) => {
    out.push(i);
    node = node[kindOf(node)][i];
    if (at < p.length - 1) out.push(kindOf(node));
  });
  return out;
}

// The error path of a 422 entry's loc: ["query", "filter", "and", 1] → "and/1".
export function errorPathOf(error) {
  const entry = error && error.errors && error.errors.find((e) => Array.isArray(e.loc) && e.loc[1] === "filter");
  if (!entry) return null;
  return entry.loc.slice(2).join("/") || "root";
}
