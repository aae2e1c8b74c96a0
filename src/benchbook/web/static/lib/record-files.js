// File values on the record page: name and size from GET /files/{sha256}/info, download, and a
// preview fetched as a blob and shown with the type the server recorded: images inline, CSV/TSV
// as a table of the first rows, PDF in an <object>. Nothing a file holds is ever run as a page
// of the app (the blob's type is set here, and only these three kinds are shown).
import { html, useEffect, useState } from "./html.js";
import { get, apiUrl, enc } from "./api.js";
import { formatBytes } from "./ui.js";

const PREVIEW_ROWS = 20;

function parseDelimited(text, delimiter) {
  const rows = [];
  let row = [], cell = "", quoted = false;
  for (let i = 0; i < text.length && rows.length <= PREVIEW_ROWS; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') { cell += '"'; i++; }
      else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === delimiter) { row.push(cell); cell = ""; }
    else if (ch === "\n" || ch === "\r") {
      if (ch === "\r" && text[i + 1] === "\n") i++;
      row.push(cell); rows.push(row); row = []; cell = "";
    } else cell += ch;
  }
  if (cell || row.length) { row.push(cell); rows.push(row); }
  return rows;
}

function kindOf(info) {
  const type = (info.content_type || "").toLowerCase();
  const name = (info.filename || "").toLowerCase();
  if (type.startsWith("image/") && !type.includes("svg")) return "image";
  if (type === "application/pdf" || name.endsWith(".pdf")) return "pdf";
  if (type.includes("csv") || name.endsWith(".csv")) return "csv";
  if (type.includes("tab-separated") || name.endsWith(".tsv")) return "tsv";
  return null;
}

export function FilePreview({ sha }) {
  const [state, setState] = useState({ info: null, url: null, rows: null, error: null });
  useEffect(() => {
    let url = null;
    let live = true;
    (async () => {
      try {
        const info = await get(`/files/${enc(sha)}/info`);
        const kind = kindOf(info);
        if (!kind) { if (live) setState({ info, url: null, rows: null, error: null }); return; }
        const response = await fetch(apiUrl(`/files/${enc(sha)}`));
        if (!response.ok) throw new Error(`the file could not be read (${response.status})`);
        if (kind === "csv" || kind === "tsv") {
          const text = await response.text();
          if (live) setState({ info, kind, url: null, rows: parseDelimited(text, kind === "csv" ? "," : "\t"), error: null });
        } else {
          const blob = new Blob([await response.arrayBuffer()], { type: kind === "pdf" ? "application/pdf" : info.content_type });
          url = URL.createObjectURL(blob);
          if (live) setState({ info, kind, url, rows: null, error: null });
        }
      } catch (error) {
        if (live) setState((s) => ({ ...s, error }));
      }
    })();
    return () => { live = false; if (url) URL.revokeObjectURL(url); };
  }, [sha]);
  const { info, kind, url, rows, error } = state;
  return html`<div class="file-preview">
    ${info ? html`<p><a href=${apiUrl(`/files/${enc(sha)}`)} download=${info.filename}>${info.filename}</a>
      <span class="muted"> · ${formatBytes(info.size)} · ${info.content_type || "unknown type"}</span></p>` : html`<p class="muted">${sha.slice(0, 12)}…</p>`}
    ${error ? html`<p class="error" role="alert">Preview failed: ${error.message}</p>` : null}
    ${kind === "image" && url ? html`<img class="preview-image" src=${url} alt=${"preview of " + info.filename} />` : null}
    ${kind === "pdf" && url ? html`<object class="preview-pdf" data=${url} type="application/pdf" aria-label=${"preview of " + info.filename}>
      <a href=${url} download=${info.filename}>Download ${info.filename}</a></object>` : null}
    ${rows ? html`<div class="table-wrap preview-table"><table class="grid" aria-label=${"first rows of " + info.filename}>
      <thead><tr>${(rows[0] || []).map((c) => html`<th scope="col">${c}</th>`)}</tr></thead>
      <tbody>${rows.slice(1, PREVIEW_ROWS + 1).map((r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>`)}</tbody>
    </table></div>` : null}
  </div>`;
}
