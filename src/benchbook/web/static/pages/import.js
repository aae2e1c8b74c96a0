// Import a file into a collection (#/c/:collection/import): POST /collections/{name}/import with
// the file (CSV, TSV, XLSX, JSON, NDJSON) and the options the API offers (docs/import.md); the
// upload's progress shows in the status bar. Before importing, a preview (the same request with
// dry_run and skip_bad): each column with the field it goes into (changeable: the file sent names
// the chosen fields in its header, lib/import-file.js), its type, and the first rows as they
// will be read. Then what happened: created, updated, unchanged, skipped, the inferred schema,
// notes, the problem lines (also of a refused import) and the rejected rows, with "Undo this
// import" (POST /imports/{batch_id}/undo).
import { html, useState, useEffect, useRef } from "../lib/html.js";
import { get, post, api, apiUrl, enc } from "../lib/api.js";
import { href, seg } from "../lib/router.js";
import { upload } from "../lib/status.js";
import { useLoad, useAction, Loading, ErrorBox, Field, notify, useTitle, formatCount, formatBytes } from "../lib/ui.js";
import { readColumns, matchField, SPECIAL, LEAVE_OUT } from "../lib/import-file.js";
import { counted } from "../lib/counting.js";

// A preview is a dry run of the whole file on the server: asked by itself up to this size.
const AUTO_PREVIEW = 16 << 20;
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
  // The file's columns as the browser reads them, and the field the user chose for some of them.
  const [look, setLook] = useState(null);
  const [chosen, setChosen] = useState({});
  useEffect(() => {
    setChosen({});
    setLook(null);
    if (!file) return undefined;
    let live = true;
    readColumns(file, { format: form.format, delimiter: form.delimiter }).then((l) => { if (live) setLook(l); });
    return () => { live = false; };
  }, [file, form.format, form.delimiter]);
  const schemaName = form.create_schema ? "" : form.schema;
  const target = useLoad((signal) => (schemaName ? get(`/schemas/${enc(schemaName)}`, {}, { signal }) : Promise.resolve(null)), [schemaName]);
  const fields = target.data ? target.data.fields.filter((f) => !f.deleted_at) : [];
  const mapping = columnsOf(look, fields, chosen, form.create_schema || !schemaName);
  const renames = Object.fromEntries(mapping.filter((m) => m.value !== undefined && m.value !== m.matched)
    .map((m) => [m.column, m.value || LEAVE_OUT + m.column]));
  const doubled = fields.filter((f) => mapping.filter((m) => m.value === f.name).length > 1).map((f) => f.label || f.name);
  const body = () => (Object.keys(renames).length && look && look.rename ? look.rename(renames) : file);
  const formData = (check) => {
    const data = new FormData();
    data.append("file", body(), file.name);
    const schema = form.create_schema ? form.new_schema.trim() : form.schema;
    if (schema) data.append("schema", schema);
    if (form.create_schema) data.append("create_schema", "true");
    for (const k of ["key", "parent_key", "date_format", "format", "delimiter", "encoding", "sheet"]) {
      if (form[k].trim()) data.append(k, form[k].trim());
    }
    if (form.date_order !== "auto") data.append("date_order", form.date_order);
    if (form.skip_bad || check) data.append("skip_bad", "true");
    if (form.dry_run || check) data.append("dry_run", "true");
    return data;
  };
  const send = () => upload(`/collections/${seg(name)}/import`, formData(false), file.name);
  // The preview: asked again when the file, the schema or a column's field changes, and on demand.
  const [preview, setPreview] = useState(null);
  const [again, setAgain] = useState(0);
  const renameKey = JSON.stringify(renames);
  useEffect(() => {
    if (!file || !look || doubled.length || (schemaName && target.loading)) return undefined;
    if (file.size > AUTO_PREVIEW && !again) { setPreview({ large: true }); return undefined; }
    const ctl = new AbortController();
    setPreview((p) => ({ ...(p || {}), busy: true }));
    api(`/collections/${seg(name)}/import`, { method: "POST", form: formData(true), signal: ctl.signal })
      .then((r) => setPreview({ result: r }), (e) => { if (e.name !== "AbortError") setPreview({ error: e }); });
    return () => ctl.abort();
  }, [file, look, form.create_schema, schemaName, target.loading, renameKey, again]);
  const errors = error && error.fieldErrors ? error.fieldErrors() : {};
  const submit = async (e) => {
    e.preventDefault();
    if (!file || busy) return;
    setBusy(true);
    setError(null);
    try {
      const r = await send();
      setPreview(null);
      onResult(r);
      notify(r.dry_run ? `Checked ${file.name}: nothing written` : `Imported ${file.name}: ${formatCount(r.created)} created, ${formatCount(r.updated)} updated`, "ok");
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
        onChange=${(e) => { setAgain(0); setFile(e.target.files[0] || null); }} />`}<//>
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
    ${file ? html`<${Preview} look=${look} size=${file.size} mapping=${mapping} fields=${fields} preview=${preview} doubled=${doubled}
      creating=${form.create_schema} skipBad=${form.skip_bad} onChoose=${(column, value) => setChosen({ ...chosen, [column]: value })}
      onAgain=${() => setAgain(again + 1)} />` : null}
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
      <button type="submit" class="primary" disabled=${busy || !file || doubled.length > 0}>${busy ? "Importing…" : form.dry_run ? "Check file" : "Import"}</button>
    </div>
  </form>`;
}

// A refused import (422): one line per distinct problem, from the error's entries. A dry run
// that finds problems is a check that did its job, not an error: it says what an import would do.
function Refused({ error, dryRun = false }) {
  const lines = (error.errors || []).map((e) => (typeof e === "object" ? e.msg : String(e)));
  const checked = dryRun && error.status === 422;
  const box = useRef(null);
  useEffect(() => { if (box.current) { box.current.focus({ preventScroll: true }); box.current.scrollIntoView({ block: "start" }); } }, [error]);
  return html`<div ref=${box} tabindex="-1" data-testid="import-refused" class=${checked ? "plan-box problems" : "error-box problems"} role=${checked ? "status" : "alert"}>
    <strong>${checked ? "Checked: importing this file as it is would be refused, and nothing was written."
      : html`${error.status ? `Error ${error.status}: ` : ""}Nothing was imported.`}</strong>
    ${lines.length > 1 || (lines.length === 1 && lines[0] !== error.message)
      ? html`<ul>${lines.map((l) => html`<li>${l}</li>`)}</ul>` : html`<p>${error.message}</p>`}
    ${lines.length && error.status === 422 ? html`<p>Fix the rows, or tick “Skip bad rows” to import the good ones.</p>` : null}
  </div>`;
}

// An undo's answer ({deleted, reverted}) in words: "3 records deleted, 1 update reverted".
const undoneWords = (r) => `${counted(r.deleted, "record deleted", "records deleted")}, ${counted(r.reverted, "update reverted", "updates reverted")}`;

function Result({ name, result }) {
  const [undone, setUndone] = useState(null);
  const [force, setForce] = useState(false);
  const undo = useAction(() => post(`/imports/${seg(result.batch_id)}/undo`, force ? { force: true } : {}));
  const schemaLink = result.schema ? { schema: result.schema } : {};
  const heading = useRef(null);
  useEffect(() => { if (heading.current) { heading.current.focus({ preventScroll: true }); heading.current.scrollIntoView({ block: "start" }); } }, [result]);
  return html`<section class="card result" aria-label="Import result" data-testid="import-result">
    <h2 tabindex="-1" ref=${heading}>${result.dry_run ? "Dry run: nothing was written" : `Imported ${result.file}`}</h2>
    <dl>
      <dt>Created</dt><dd data-testid="created">${formatCount(result.created)}</dd>
      <dt>Updated</dt><dd data-testid="updated">${formatCount(result.updated)}</dd>
      <dt>Unchanged</dt><dd>${formatCount(result.unchanged)}</dd>
      <dt>Skipped</dt><dd data-testid="skipped">${formatCount(result.skipped)}</dd>
      ${result.schema ? html`<dt>New schema</dt><dd>${result.schema}${result.created_collection ? ` (collection ${name} created too)` : ""}</dd>` : null}
    </dl>
    ${result.inferred_fields && result.inferred_fields.length ? html`<details><summary>Inferred fields (${formatCount(result.inferred_fields.length)})</summary>
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
        const r = await undo.run(); if (r) { setUndone(r); notify(`Undid the import: ${undoneWords(r)}`, "ok"); } }}>
        ${undo.busy ? "Undoing…" : "Undo this import"}</button>
      ${undo.error && undo.error.status === 409 ? html`<label class="check"><input type="checkbox" checked=${force}
        onChange=${(e) => setForce(e.target.checked)} /> Force (also delete children added since, put back fields edited since)</label>` : null}
    </div>` : null}
    <${ErrorBox} error=${undo.error} />
    ${undone ? html`<div class="ok-box" role="status" data-testid="undo-result">Undone: ${undoneWords(undone)}${undone.already_gone
      ? `, ${formatCount(undone.already_gone)} ${undone.already_gone === 1 ? "was" : "were"} already gone` : ""}.
      <a href=${href(`/trash`)}>Recently deleted</a></div>` : null}
  </section>`;
}

// One line per column: {column, special, matched (the field the server would pick), value (the
// field chosen; "" left out; undefined when not choosable)}.
function columnsOf(look, fields, chosen, fixed) {
  if (!look || !look.columns) return [];
  return look.columns.map((column) => {
    if (column in SPECIAL) return { column, special: SPECIAL[column] };
    if (fixed || !fields.length) return { column };
    const match = matchField(column, fields);
    const matched = match ? match.name : "";
    return { column, matched, value: column in chosen ? chosen[column] : matched };
  });
}

const shown = (v) => (v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v));

// Before importing: each column with the field it goes into and its type, the first rows as read,
// and what an import would do (the dry run's counts and problems).
function Preview({ look, size, mapping, fields, preview, doubled, creating, skipBad, onChoose, onAgain }) {
  const r = preview && preview.result;
  const inferred = r && r.inferred_fields && r.inferred_fields.length ? r.inferred_fields : null;
  const byName = Object.fromEntries(fields.map((f) => [f.name, f]));
  const rows = r && r.preview ? r.preview : [];
  // Without the file's own header (a workbook): the columns are those the server read.
  const lines = mapping.length ? mapping
    : inferred ? inferred.map((f) => ({ column: f.column }))
    : rows.length ? Object.keys(rows[0]).map((k) => ({ column: k, value: undefined, readAs: k })) : [];
  const fieldOf = (m) => {
    if (m.special) return null;
    if (inferred) { const f = inferred.find((x) => x.column === m.column); return f ? { name: f.name, type: f.type, reference: f.reference } : null; }
    const name = m.value !== undefined ? m.value : m.readAs || (matchField(m.column, fields) || {}).name;
    return name && byName[name] ? byName[name] : null;
  };
  const valuesOf = (f) => rows.slice(0, 3).map((row) => shown(row[f.name])).filter((v) => v !== "").join(" · ");
  const problems = r && r.problems ? r.problems : [];
  const rowsRead = r ? r.created + r.updated + r.unchanged + r.skipped : 0;
  return html`<section class="import-preview" aria-labelledby="preview-h" data-testid="import-preview">
    <h2 id="preview-h">Before importing: how the file will be read</h2>
    ${look && !look.columns ? html`<p class="muted">The columns go into the fields they name (${look.why}).</p>` : null}
    ${doubled.length ? html`<div class="warn-box" role="alert">Two columns go into ${doubled.join(", ")}: choose one field per column.</div>` : null}
    ${preview && preview.error ? html`<div class="warn-box" role="status">No preview: ${preview.error.message}</div>` : null}
    ${preview && preview.large ? html`<p class="muted">A large file (${formatBytes(size)}): the preview reads all of it on the server, so it waits for “Preview”.</p>`
      : !r && !(preview && preview.error) ? html`<${Loading} label="Reading the file…" />` : null}
    ${lines.length ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Columns of the file">
      <table class="grid" data-testid="import-columns"><caption class="sr-only">Columns of the file, the field each goes into and its type</caption>
      <thead><tr><th scope="col">Column</th><th scope="col">Goes into</th><th scope="col">Type</th><th scope="col">First values</th></tr></thead>
      <tbody>${lines.map((m) => { const f = fieldOf(m); return html`<tr key=${m.column} data-column=${m.column}>
        <th scope="row">${m.column}</th>
        <td>${m.special ? html`<span class="muted">${m.special}</span>`
          : m.value !== undefined ? html`<select aria-label=${`Field for column ${m.column}`} value=${m.value} onChange=${(e) => onChoose(m.column, e.target.value)}>
              <option value="">not imported</option>
              ${fields.map((x) => html`<option value=${x.name}>${x.label && x.label !== x.name ? `${x.label} (${x.name})` : x.name}</option>`)}</select>`
          : f ? html`${creating ? "new field " : ""}<code>${f.name}</code>` : html`<span class="muted">not imported</span>`}</td>
        <td data-testid="column-type">${f ? html`${f.type}${f.reference ? html` <span class="muted">(names ${f.reference} records)</span>` : null}` : ""}</td>
        <td>${f ? valuesOf(f) : ""}</td></tr>`; })}</tbody></table></div>` : null}
    ${rows.length ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="First rows as they will be read">
      <table class="grid" data-testid="import-rows"><caption>The first ${rows.length === 1 ? "row as it" : `${formatCount(rows.length)} rows as they`} will be read</caption>
      <thead><tr>${Object.keys(rows[0]).map((k) => html`<th scope="col">${(byName[k] && byName[k].label) || k}</th>`)}</tr></thead>
      <tbody>${rows.map((row) => html`<tr>${Object.keys(rows[0]).map((k) => html`<td>${shown(row[k])}</td>`)}</tr>`)}</tbody></table></div>` : null}
    ${r ? html`<p data-testid="preview-summary">${counted(rowsRead, "row read", "rows read")}: importing would create ${formatCount(r.created)}${r.updated ? `, update ${formatCount(r.updated)}` : ""}${r.unchanged ? `, leave ${formatCount(r.unchanged)} unchanged` : ""}.
      ${problems.length ? html` ${formatCount(r.skipped)} ${r.skipped === 1 ? "row has" : "rows have"} problems${skipBad ? " and would be left out" : ": the import would be refused unless you tick “Skip bad rows”"}:
        <ul>${problems.slice(0, 5).map((p) => html`<li>${p.text || p.message}</li>`)}</ul>` : null}</p>
      ${r.notes && r.notes.length ? html`<ul class="notes">${r.notes.map((n) => html`<li>${n}</li>`)}</ul>` : null}` : null}
    <button type="button" onClick=${onAgain} disabled=${!!(preview && preview.busy)}>${preview && preview.busy ? "Reading…" : preview && preview.large ? "Preview" : "Preview again with these options"}</button>
  </section>`;
}
