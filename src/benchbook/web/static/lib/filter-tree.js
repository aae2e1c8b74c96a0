// The records table's field catalogue and the filter tree's pure helpers (no Preact: Node's test
// runner checks them, tests/js/). The catalogue lists, for one schema of a collection, its own
// fields, the fields it inherits from ancestor schemas (nearest owner wins, as the API resolves
// them), `ref.target` columns through its reference fields, and the fields of descendant schemas
// (for descendant filter leaves). The tree helpers read and change the API's filter tree
// (docs/filters.md): and/or groups, nested, of leaves `{field, op, value, schema?}`.

export const BASE_COLUMNS = ["natural_name", "id", "schema_name", "parent_record_id", "created_at", "updated_at"];
export const BASE_LABELS = { natural_name: "Name", id: "Id", schema_name: "Schema", parent_record_id: "Parent",
  created_at: "Created", updated_at: "Updated" };
export const OP_LABELS = { eq: "=", ne: "≠", gt: ">", gte: "≥", lt: "<", lte: "≤", contains: "contains", in: "is one of",
  is_null: "is empty" };
export const ALL_OPS = ["eq", "ne", "gt", "gte", "lt", "lte", "contains", "in", "is_null"];

export const live = (fields) => (fields || []).filter((f) => !f.deleted_at);
export const fieldLabel = (f) => f.label && f.label !== f.name ? `${f.label} (${f.name})` : f.name;

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
  // A field the display template shows alone ("{name}") is the Name column already: not twice.
  const named = /^\{\s*([A-Za-z0-9_]+)\s*\}$/.exec((schema.display_template || "").trim());
  return { schema, own, ancestors, inherited, refs, descendants, children, columns,
    defaultColumns: ["natural_name", ...own.map((f) => f.name).filter((n) => !named || named[1] !== n)] };
}

// The fields a filter leaf may name: [{group label, schema (undefined for own), fields}].
export function leafChoices(cat) {
  const groups = [{ label: `${cat.schema.label || cat.schema.name} (own and inherited)`, schema: undefined,
    fields: [...cat.own, ...cat.inherited.map((c) => c.field)] }];
  for (const a of cat.ancestors) groups.push({ label: `Ancestor ${a.label || a.name}`, schema: a.name, fields: live(a.fields) });
  for (const d of cat.descendants) groups.push({ label: `Any descendant ${d.label || d.name}`, schema: d.name, fields: live(d.fields) });
  return groups;
}

export function findField(cat, leaf) {
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
export const isGroup = (n) => n && typeof n === "object" && (Array.isArray(n.and) || Array.isArray(n.or));
export const kindOf = (g) => (Array.isArray(g.and) ? "and" : "or");
// Every leaf of a tree (null: none), in order.
export const leavesOf = (n) => (isGroup(n) ? (n.and || n.or).flatMap(leavesOf) : n ? [n] : []);

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

export function replaceAt(node, path, fn) {
  if (!path.length) return fn(node);
  const k = kindOf(node);
  const items = node[k].slice();
  const [i, ...rest] = path;
  const changed = replaceAt(items[i], rest, fn);
  if (changed === null) items.splice(i, 1); else items[i] = changed;
  return { [k]: items };
}

// "and/1/or/0"-style path parts below the root for the node at index path `p`.
export function pathKinds(root, p) {
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
