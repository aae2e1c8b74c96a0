// Import a file into a collection (#/c/:collection/import): POST /collections/{name}/import with
// the file (CSV, TSV, XLSX, JSON, NDJSON) and the options the API offers (docs/import.md); the
// upload's progress shows in the status bar. Then what happened: created, updated, unchanged,
// skipped, the inferred schema, notes, the problem lines (also of a refused import) and the
// rejected rows, with "Undo this import" (POST /imports/{batch_id}/undo).
import { html, useState, useEffect, useRef } from "../lib/html.js";
import { get, post, apiUrl } from "../lib/api.js";
import { href, seg } from "../lib/router.js";
import { upload } from "../lib/status.js";
import { useLoad, useAction, Loading, ErrorBox, Field, notify, useTitle, formatCount, formatBytes } from "../lib/ui.js";

const ACCEPT = ".csv,.tsv,.tab,.txt,.xlsx,.xlsm,.json,.ndjson,.jsonl";

export default function Import({ params, query }) {
  const name = params.collection;
  useTitle(`Import into ${name}`);
  const state = useLoad((signal) => get(`/collections/${seg(name)}`, {}, { signal })
    .catch((e) => { if (e.status === 404) return null; throw e; }), [name]);
  const [result, setResult] = useState(null);
  const [refused, setRefused] = useState(null);
  if (state.loading && state.data === undefined) return html`<section class="page import"><h1>Import into ${name}</h1><${Loading} /></section>`;
  const collection = state.data;
  return html`<section class="page import">
    <nav class="breadcrumb" aria-label="Breadcrumb"><a href=${href("/")}>Collections</a> ›
      ${collection ? html`<a href=${href(`/c/${seg(name)}`)}>${name}</a>` : name} › Import</nav>
    <h1>Import a file into ${name}</h1>
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${collection === null ? html`<div class="warn-box" role="status">There is no collection ${name} yet: import with
      “Create a schema from the file” to create it together with the schema.</div>` : null}
    ${state.error ? null : html`<${ImportForm} name=${name} collection=${collection} initialSchema=${query.schema}
      onResult=${(r) => { setResult(r); setRefused(null); state.reload(); }} onRefused=${(e, dryRun) => { setRefused({ error: e, dryRun }); setResult(null); }} />`}
    ${refused ? html`<${Refused} error=${refused.error} dryRun=${refused.dryRun} />` : null}
    ${result ? html`<${Result} name=${name} result=${result} />` : null}
  </section>`;
}

function ImportForm({ name, collection, initialSchema, onResult, onRefused }) {
  const schemas = (collection && collection.schemas) || [];
  const [file, setFile] = useState(null);
  const [form, setForm] = useState({ schema: initialSchema && schemas.includes(initialSchema) ? initialSchema : (schemas[0] || ""),
    create_schema: !schemas.length, new_schema: "", key: "", parent_key: "", date_order: "auto", date_format: "",
    skip_bad: false, dry_run: false, format: "", delimiter: "", encoding: "", sheet: "" });
  const set = (key) => (e) => setForm({ ...form, [key]: e.target.type === "checkbox" ? e.target.checked : e.target.value });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const send = () => {
    const data = new FormData();
    data.append("file", file, file.name);
    const schema = form.create_schema ? form.new_schema.trim() : form.schema;
    if (schema) data.append("schema", schema);
    if (form.create_schema) data.append("create_schema", "true");
    for (const k of ["key", "parent_key", "date_format", "format", "delimiter", "encoding", "sheet"]) {
      if (form[k].trim()) data.append(k, form[k].trim());
    }
    if (form.date_order !== "auto") data.append("date_order", form.date_order);
    if (form.skip_bad) data.append("skip_bad", "true");
    if (form.dry_run) data.append("dry_run", "true");
    return upload(`/collections/${seg(name)}/import`, data, file.name);
  };
  const errors = error && error.fieldErrors ? error.fieldErrors() : {};
  const submit = async (e) => {
    e.preventDefault();
    if (!file || busy) return;
    setBusy(true);
    setError(null);
    try {
      const r = await send();
      onResult(r);
      notify(r.dry_run ? `Checked ${file.name}: nothing written` : `Imported ${file.name}: ${r.created} created, ${r.updated} updated`, "ok");
    } catch (err) {
      setError(err);
      onRefused(err, form.dry_run);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="import-form card" onSubmit=${submit}>
    <${Field} label="File" hint="CSV, TSV, Excel (.xlsx), JSON (an array of objects) or NDJSON; the first row names the fields." error=${errors.file}>
      ${(id, d) => html`<input id=${id} aria-describedby=${d} type="file" accept=${ACCEPT} required
        onChange=${(e) => setFile(e.target.files[0] || null)} />`}<//>
    <fieldset class="field"><legend>Schema of the records</legend>
      <label class="check"><input type="radio" name="schema-mode" checked=${!form.create_schema} disabled=${!schemas.length}
        onChange=${() => setForm({ ...form, create_schema: false })} /> An existing schema of the collection</label>
      ${!form.create_schema ? html`<${Field} label="Schema" error=${errors.schema}
          hint="Not needed when the file has a schema_name column.">
        ${(id, d) => html`<select id=${id} aria-describedby=${d} value=${form.schema} onChange=${set("schema")}>
          <option value="">(from the file's schema_name column)</option>
          ${schemas.map((s) => html`<option value=${s}>${s}</option>`)}</select>`}<//>` : null}
      <label class="check"><input type="radio" name="schema-mode" checked=${form.create_schema}
        onChange=${() => setForm({ ...form, create_schema: true })} /> Create a schema from the file</label>
      ${form.create_schema ? html`<${Field} label="New schema name" error=${errors.schema}
          hint="Default: the file's name. Field types are inferred from the values.">
        ${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.new_schema} onInput=${set("new_schema")} />`}<//>` : null}
    </fieldset>
    <div class="options">
      <${Field} label="Key fields (update matching records)" error=${errors.key} hint="FIELD[,FIELD]: rows matching a live record update it.">
        ${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.key} onInput=${set("key")} />`}<//>
      <${Field} label="Parent key" error=${errors.parent_key} hint="[COLUMN=][SCHEMA.]FIELD: finds each row's parent.">
        ${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.parent_key} onInput=${set("parent_key")} />`}<//>
      <${Field} label="Dates like 01/02/2012" error=${errors.date_order}>
        ${(id, d) => html`<select id=${id} aria-describedby=${d} value=${form.date_order} onChange=${set("date_order")}>
          <option value="auto">decide per column</option><option value="day_first">day first</option>
          <option value="month_first">month first</option></select>`}<//>
      <${Field} label="Date format" error=${errors.date_format} hint="A strptime format, e.g. %d %b %Y.">
        ${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.date_format} onInput=${set("date_format")} />`}<//>
      <${Field} label="Format" error=${errors.format}>
        ${(id, d) => html`<select id=${id} aria-describedby=${d} value=${form.format} onChange=${set("format")}>
          <option value="">from the file name</option>
          ${["csv", "tsv", "xlsx", "json", "ndjson"].map((f) => html`<option value=${f}>${f}</option>`)}</select>`}<//>
      <${Field} label="Delimiter" error=${errors.delimiter} hint="One character or tab; default sniffed.">
        ${(id, d) => html`<input id=${id} aria-describedby=${d} maxlength="3" value=${form.delimiter} onInput=${set("delimiter")} />`}<//>
      <${Field} label="Encoding" error=${errors.encoding} hint="Default UTF-8, else detected.">
        ${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.encoding} onInput=${set("encoding")} />`}<//>
      <${Field} label="Excel sheet" error=${errors.sheet} hint="Name or position from 1.">
        ${(id, d) => html`<input id=${id} aria-describedby=${d} value=${form.sheet} onInput=${set("sheet")} />`}<//>
    </div>
    <label class="check"><input type="checkbox" checked=${form.skip_bad} onChange=${set("skip_bad")} />
      Skip bad rows (import the good ones; the bad ones are kept as a file)</label>
    <label class="check"><input type="checkbox" checked=${form.dry_run} onChange=${set("dry_run")} />
      Dry run: check every row, write nothing</label>
    <div class="toolbar">
      <button type="submit" class="primary" disabled=${busy || !file}>${busy ? "Importing…" : form.dry_run ? "Check file" : "Import"}</button>
    </div>
  </form>`;
}

// A refused import (422): one line per distinct problem, from the error's entries. A dry run
// that finds problems is a check that did its job, not an error: it says what an import would do.
function Refused({ error, dryRun = false }) {
  const lines = (error.errors || []).map((e) => (typeof e === "object" ? e.msg : String(e)));
  const checked = dryRun && error.status === 422;
  return html`<div class=${checked ? "plan-box problems" : "error-box problems"} role=${checked ? "status" : "alert"}>
    <strong>${checked ? "Checked: importing this file as it is would be refused, and nothing was written."
      : html`${error.status ? `Error ${error.status}: ` : ""}Nothing was imported.`}</strong>
    ${lines.length > 1 || (lines.length === 1 && lines[0] !== error.message)
      ? html`<ul>${lines.map((l) => html`<li>${l}</li>`)}</ul>` : html`<p>${error.message}</p>`}
    ${lines.length && error.status === 422 ? html`<p>Fix the rows, or tick “Skip bad rows” to import the good ones.</p>` : null}
  </div>`;
}

function Result({ name, result }) {
  const [undone, setUndone] = useState(null);
  const [force, setForce] = useState(false);
  const undo = useAction(() => post(`/imports/${seg(result.batch_id)}/undo`, force ? { force: true } : {}));
  const schemaLink = result.schema ? { schema: result.schema } : {};
  const heading = useRef(null);
  useEffect(() => { if (heading.current) heading.current.focus(); }, [result]);
  return html`<section class="card result" aria-label="Import result" data-testid="import-result">
    <h2 tabindex="-1" ref=${heading}>${result.dry_run ? "Dry run: nothing was written" : `Imported ${result.file}`}</h2>
    <dl>
      <dt>Created</dt><dd data-testid="created">${formatCount(result.created)}</dd>
      <dt>Updated</dt><dd data-testid="updated">${formatCount(result.updated)}</dd>
      <dt>Unchanged</dt><dd>${formatCount(result.unchanged)}</dd>
      <dt>Skipped</dt><dd data-testid="skipped">${formatCount(result.skipped)}</dd>
      ${result.schema ? html`<dt>New schema</dt><dd>${result.schema}${result.created_collection ? ` (collection ${name} created too)` : ""}</dd>` : null}
    </dl>
    ${result.inferred_fields && result.inferred_fields.length ? html`<details><summary>Inferred fields (${result.inferred_fields.length})</summary>
      <div class="table-wrap"><table class="grid"><thead><tr><th scope="col">Column</th><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Restrictions</th></tr></thead>
      <tbody>${result.inferred_fields.map((f) => html`<tr><td>${f.column}</td><td>${f.name}</td><td>${f.type}</td>
        <td>${f.restrictions && Object.keys(f.restrictions).length ? JSON.stringify(f.restrictions) : ""}</td></tr>`)}</tbody></table></div></details>` : null}
    ${result.notes && result.notes.length ? html`<ul class="notes">${result.notes.map((n) => html`<li>${n}</li>`)}</ul>` : null}
    ${result.problems && result.problems.length ? html`<div class="warn-box problems"><strong>Rows left out:</strong>
      <ul>${result.problems.map((p) => html`<li>${p.text || p.message}</li>`)}</ul>
      ${result.rejected_file ? html`<p><a href=${apiUrl(`/files/${result.rejected_file.sha256}`)} download=${result.rejected_file.filename}>
        Download the rejected rows (${result.rejected_file.filename}, ${formatBytes(result.rejected_file.size)})</a></p>` : null}</div>` : null}
    ${!result.dry_run ? html`<p><a href=${href(`/c/${seg(name)}`, schemaLink)}>See the records</a>
      ${result.batch_id ? html` · <a href=${href(`/history/batch/${seg(result.batch_id)}`)}>This import in history</a>` : null}</p>` : null}
    ${result.batch_id && !undone ? html`<div class="toolbar">
      <button type="button" class="danger" disabled=${undo.busy} onClick=${async () => {
        const r = await undo.run(); if (r) { setUndone(r); notify(`Undid the import: ${r.deleted} records deleted, ${r.reverted} updates reverted`, "ok"); } }}>
        ${undo.busy ? "Undoing…" : "Undo this import"}</button>
      ${undo.error && undo.error.status === 409 ? html`<label class="check"><input type="checkbox" checked=${force}
        onChange=${(e) => setForce(e.target.checked)} /> Force (also delete children added since, put back fields edited since)</label>` : null}
    </div>` : null}
    <${ErrorBox} error=${undo.error} />
    ${undone ? html`<div class="ok-box" role="status" data-testid="undo-result">Undone: ${formatCount(undone.deleted)} records deleted,
      ${formatCount(undone.reverted)} updates reverted${undone.already_gone ? `, ${formatCount(undone.already_gone)} were already gone` : ""}.
      <a href=${href(`/trash`)}>Recently deleted</a></div>` : null}
  </section>`;
}
