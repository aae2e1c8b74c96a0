// The import page's look into a file before it is sent: its columns (the header of a CSV or TSV
// file, the keys of a JSON or NDJSON file), the field each column goes into as the server
// matches them (docs/import.md *Columns*), and a copy of the file whose header names the fields
// the user chose instead. A workbook is read by the server only: its columns are matched by name.

const HEAD_BYTES = 1 << 20;     // a CSV header is looked for in the first MiB
const JSON_BYTES = 64 << 20;    // a JSON file is renamed in the browser up to this size
export const SPECIAL = {
  schema_name: "the row's schema", parent_record_id: "the parent's record id", parent: "the parent (id, name or key)",
  id: "names the row for later rows' parent_record_id", natural_name: "not stored (recomputed)",
  _line: "not stored", _problem: "not stored",
};
export const LEAVE_OUT = "(not imported) ";

export function kindOf(file, format = "") {
  const f = format || (file.name.toLowerCase().match(/\.([a-z0-9]+)$/) || [])[1] || "";
  if (["xlsx", "xlsm"].includes(f)) return "xlsx";
  if (f === "json") return "json";
  if (["ndjson", "jsonl"].includes(f)) return "ndjson";
  return "csv";
}

// The field name a header becomes on the server (`Alcohol %` → `alcohol`, `1st` → `f_1st`).
export function fieldNameOf(header) {
  let s = String(header).trim().toLowerCase().replace(/[^a-z0-9_]+/g, "_").replace(/^_+|_+$/g, "");
  if (/^[0-9]/.test(s)) s = "f_" + s;
  return s;
}

// The live field a column names, as the server finds it: name, name in any case, the field name
// the header becomes, the label in any case; null for none.
export function matchField(column, fields) {
  const c = String(column).trim();
  const lower = c.toLowerCase();
  return fields.find((f) => f.name === c) || fields.find((f) => f.name.toLowerCase() === lower)
    || fields.find((f) => f.name === fieldNameOf(c)) || fields.find((f) => f.label && f.label.toLowerCase() === lower) || null;
}

// One CSV record from `text` at `from`: {cells, end} (end: index of its line break, or the end).
function readRecord(text, from, delimiter) {
  const cells = [];
  let cell = "";
  let quoted = false;
  let i = from;
  for (; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') { cell += '"'; i++; }
      else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"' && cell.trim() === "") { quoted = true; cell = ""; }
    else if (ch === delimiter) { cells.push(cell.trim()); cell = ""; }
    else if (ch === "\n" || ch === "\r") break;
    else cell += ch;
  }
  cells.push(cell.trim());
  return { cells, end: i };
}

// The delimiter the header uses most, outside quotes.
function sniff(line) {
  const bare = line.replace(/"[^"]*"/g, "");
  const counts = [",", ";", "\t", "|"].map((d) => [d, bare.split(d).length - 1]);
  counts.sort((a, b) => b[1] - a[1]);
  return counts[0][1] ? counts[0][0] : ",";
}

function quoteCell(value, delimiter) {
  return /["\r\n]/.test(value) || value.includes(delimiter) || value !== value.trim() ? `"${value.replace(/"/g, '""')}"` : value;
}

// What the browser can tell of `file`: {kind, columns, rename(names) → Blob | null}; columns is
// null when they cannot be read here (a workbook, a text that is not UTF-8, a large JSON file).
export async function readColumns(file, { format = "", delimiter = "" } = {}) {
  const kind = kindOf(file, format);
  if (kind === "xlsx") return { kind, columns: null, why: "a workbook's columns are matched by their names" };
  if (kind === "json" || kind === "ndjson") {
    if (file.size > JSON_BYTES) return { kind, columns: null, why: "the file is too large to look into here" };
    let rows;
    try {
      const text = await file.text();
      rows = kind === "json" ? JSON.parse(text) : text.split(/\r?\n/).filter((l) => l.trim()).map((l) => JSON.parse(l));
    } catch { return { kind, columns: null, why: "the file could not be read as JSON here" }; }
    if (!Array.isArray(rows)) return { kind, columns: null, why: "the file is not a list of objects" };
    const columns = [];
    const seen = new Set();
    for (const row of rows) for (const k of Object.keys(row && typeof row === "object" ? row : {})) if (!seen.has(k)) { seen.add(k); columns.push(k); }
    const rename = (names) => {
      const renamed = rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [names[k] ?? k, v])));
      const body = kind === "json" ? JSON.stringify(renamed) : renamed.map((r) => JSON.stringify(r)).join("\n") + "\n";
      return new Blob([body], { type: file.type || "application/json" });
    };
    return { kind, columns, rename };
  }
  const bytes = await file.slice(0, HEAD_BYTES).arrayBuffer();
  let text;
  try { text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes, { stream: file.size > HEAD_BYTES }); }
  catch { return { kind, columns: null, why: "the file is not UTF-8 text: its columns are matched by their names" }; }
  let start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  for (;;) {  // blank lines before the header are skipped, as the server does
    const nl = text.indexOf("\n", start);
    if (nl < 0 || text.slice(start, nl).trim()) break;
    start = nl + 1;
  }
  const firstLine = text.slice(start).split(/\r?\n/)[0];
  const sep = delimiter === "tab" ? "\t" : delimiter || (kind === "csv" && /\.(tsv|tab)$/i.test(file.name) ? "\t" : sniff(firstLine));
  const { cells, end } = readRecord(text, start, sep);
  if (end >= text.length && file.size > HEAD_BYTES) return { kind, columns: null, why: "its first row is too long to read here" };
  const columns = cells.filter((c, i) => c !== "" || i < cells.length - 1);
  const rename = (names) => {
    const head = new TextEncoder().encode(text.slice(0, start) + cells.map((c) => quoteCell(names[c] ?? c, sep)).join(sep));
    const endByte = new TextEncoder().encode(text.slice(0, end)).length;
    return new Blob([head, file.slice(endByte)], { type: file.type || "text/csv" });
  };
  return { kind, columns, rename };
}
