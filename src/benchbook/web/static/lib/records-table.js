// Columns of the records table: the chooser (own fields, record columns, inherited fields by
// ancestor schema, `ref.target` columns), the API's `columns` parameter (only the values a
// record's own data cannot answer: inherited and ref columns, returned under `derived`), sort keys
// (an inherited field sorts as `ancestor.field`), a cell's text, and CSV of the shown rows.
import { html } from "./html.js";
import { formatValue } from "./ui.js";

export function columnsParam(cat, columns) {
  const derived = columns.filter((k) => cat.columns[k] && ["inherited", "ref"].includes(cat.columns[k].kind));
  return derived.length ? derived : undefined;
}

export function sortKeyOf(col) {
  if (!col) return null;
  if (col.kind === "ref") return null;
  return col.sort || col.key;
}

function rawValue(col, r) {
  if (col.kind === "base") return r[col.key];
  if (col.kind === "own") return r.data ? r.data[col.key] : undefined;
  return r.derived ? r.derived[col.key] : undefined;
}

export function cellText(col, r) {
  const value = rawValue(col, r);
  if (col.key === "natural_name") return r.natural_name || r.id;
  const type = col.field && col.field.type;
  if ((type === "reference" || type === "reference_list") && value && r.reference_labels) {
    const ids = Array.isArray(value) ? value : [value];
    return ids.map((id) => r.reference_labels[id] || id).join(", ");
  }
  if ((type === "file" || type === "file_list") && value) {  // a file by its name, never its hash
    const files = r.file_labels || {};
    return (Array.isArray(value) ? value : [value]).map((sha) => (files[sha] ? files[sha].filename : `${String(sha).slice(0, 8)}…`)).join(", ");
  }
  if (col.kind === "base" && (col.key === "created_at" || col.key === "updated_at")) return formatValue(value, "datetime");
  return formatValue(value, type);
}

export function cellValue(col, r) {
  return cellText(col, r);
}

function csvCell(text) {
  const s = text === null || text === undefined ? "" : String(text);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

// CSV of exactly the given rows and columns (the raw values, as the API gives them).
export function toCsv(cat, columns, rows) {
  const head = ["id", ...columns.filter((k) => k !== "id")];
  const lines = [head.map(csvCell).join(",")];
  for (const r of rows) {
    lines.push(head.map((k) => {
      if (k === "id") return csvCell(r.id);
      if (k === "natural_name") return csvCell(r.natural_name);
      const v = rawValue(cat.columns[k], r);
      return csvCell(Array.isArray(v) ? v.join(", ") : (v !== null && typeof v === "object" ? JSON.stringify(v) : v));
    }).join(","));
  }
  return lines.join("\r\n") + "\r\n";
}

export function download(filename, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function ColumnChooser({ cat, columns, onChange }) {
  const toggle = (key) => onChange(columns.includes(key) ? columns.filter((k) => k !== key) : [...columns, key]);
  const box = (c) => html`<label class="check" key=${c.key}><input type="checkbox" checked=${columns.includes(c.key)}
    disabled=${c.key === "natural_name"} onChange=${() => toggle(c.key)} /> ${c.label}</label>`;
  const all = Object.values(cat.columns);
  const groups = [
    ["Own fields", all.filter((c) => c.kind === "own")],
    ["Record columns", all.filter((c) => c.kind === "base")],
    ...cat.ancestors.map((a) => [`Inherited from ${a.label || a.name}`, all.filter((c) => c.kind === "inherited" && c.owner === a.name)]),
    ["Through references", all.filter((c) => c.kind === "ref")],
  ].filter(([, list]) => list.length);
  // Escape closes the open chooser and gives the focus back to its button.
  const onKeyDown = (e) => {
    const box = e.currentTarget;
    if (e.key !== "Escape" || !box.open) return;
    e.preventDefault();
    e.stopPropagation();
    box.open = false;
    box.querySelector("summary").focus();
  };
  return html`<details class="column-chooser" onKeyDown=${onKeyDown}>
    <summary class="button">Columns (${columns.length})</summary>
    <div class="chooser-body">
      ${groups.map(([label, list]) => html`<fieldset><legend>${label}</legend>${list.map(box)}</fieldset>`)}
      <button type="button" class="link" onClick=${() => onChange(cat.defaultColumns)}>Reset columns</button>
    </div>
  </details>`;
}
