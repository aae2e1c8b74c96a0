// One record (#/r/<id>): breadcrumb of its ancestors, its values with inline editing (the API's
// messages next to each field), files with preview, children by schema, referrers, what is
// deleted above it or of its fields (with their restore actions), delete, its history, and a
// notice when syncs left open conflicts on it.
import { html, useState, useEffect, useRef } from "../lib/html.js";
import { get, patch, post, del, enc, ApiError } from "../lib/api.js";
import { href, seg, navigate } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, Confirm, notify, useTitle, formatTime } from "../lib/ui.js";
import { counted } from "../lib/counting.js";
import { PlanText } from "../lib/plans.js";
import { FieldControl, ShowValue, toText, toValue } from "../lib/record-editor.js";
import { FilePreview } from "../lib/record-files.js";
import { EntryList } from "../lib/entries.js";
import { SyncNotice } from "../lib/sync.js";
import { ReferencedChoice, referrerCounts, countsFromError } from "../lib/delete-referenced.js";

function Breadcrumb({ record }) {
  const ancestors = record.ancestors || [];
  const root = ancestors.length ? ancestors[0].schema_name : record.schema_name;
  return html`<nav aria-label="Breadcrumb"><ol class="breadcrumb">
    ${record.collection ? html`<li><a href=${href("/c/" + seg(record.collection), { schema: root })}>${record.collection}</a></li>` : null}
    ${ancestors.map((a) => html`<li><a href=${href("/r/" + seg(a.id))}>${a.natural_name || a.id}</a>
      <span class="muted"> (${a.schema_name})</span></li>`)}
    <li aria-current="page">${record.natural_name || record.id}</li>
  </ol></nav>`;
}

function Values({ record, schema, onSaved }) {
  const fields = schema.fields.filter((f) => !f.deleted_at);
  const initial = () => Object.fromEntries(fields.map((f) => [f.name,
    ["reference", "file"].includes(f.type) ? record.data[f.name] ?? null : toText(f, record.data[f.name])]));
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(initial);
  const [labels] = useState({});
  const [uploading, setUploading] = useState(0);  // file uploads in progress: Save waits for them
  // Cancel and Escape leave edit mode with the draft dropped and the focus back on "Edit values"
  const editButton = useRef(null);
  const backToEdit = useRef(false);
  useEffect(() => {
    if (editing || !backToEdit.current) return;
    backToEdit.current = false;
    if (editButton.current) editButton.current.focus();
  }, [editing]);
  const cancel = () => { backToEdit.current = true; setEditing(false); save.clear(); };
  // Escape anywhere in the form cancels, unless something inside it (the reference picker's list)
  // took the key first to close itself (preventDefault).
  const onKeyDown = (e) => {
    if (e.key !== "Escape" || e.defaultPrevented || e.isComposing) return;
    e.preventDefault();
    cancel();
  };
  const save = useAction(async () => {
    const data = {};
    for (const f of fields) {
      const before = ["reference", "file"].includes(f.type) ? record.data[f.name] ?? null : toText(f, record.data[f.name]);
      if (draft[f.name] !== before) data[f.name] = ["reference", "file"].includes(f.type) ? draft[f.name] : toValue(f, draft[f.name]);
    }
    if (!Object.keys(data).length) return record;
    return patch(`/records/${enc(record.id)}`, { data });
  });
  const errors = save.error instanceof ApiError ? save.error.fieldErrors() : {};
  const unplaced = save.error && !fields.some((f) => errors[f.name]) ? save.error : null;
  if (!editing) {
    return html`<section aria-labelledby="values-h">
      <div class="section-head"><h2 id="values-h">Values</h2>
        ${record.deleted_at ? null : html`<button type="button" ref=${editButton} onClick=${() => { setDraft(initial()); save.clear(); setEditing(true); }}>Edit values</button>`}</div>
      <dl class="props">${fields.map((f) => html`<dt>${f.label || f.name}</dt>
        <dd data-field=${f.name}><${ShowValue} field=${f} value=${record.data[f.name]} record=${record} /></dd>`)}</dl>
      ${fields.filter((f) => ["file", "file_list"].includes(f.type) && record.data[f.name]).map((f) => html`
        <div class="files" aria-label=${"files of " + (f.label || f.name)}><h3>${f.label || f.name}</h3>
          ${[].concat(record.data[f.name]).map((sha) => html`<${FilePreview} key=${sha} sha=${sha} />`)}</div>`)}
    </section>`;
  }
  return html`<section aria-labelledby="values-h">
    <h2 id="values-h">Edit values</h2>
    <form class="record-form" onKeyDown=${onKeyDown} onSubmit=${async (e) => {
      e.preventDefault();
      if (uploading) return;  // Enter in a field while a file is still uploading
      const saved = await save.run();
      if (saved) { setEditing(false); notify("Saved", "ok"); onSaved(saved); }
    }}>
      ${fields.map((f) => html`<${FieldControl} key=${f.name} field=${f} draft=${draft} setDraft=${setDraft}
        error=${errors[f.name]} record=${record} labels=${labels} onUploading=${(n) => setUploading((u) => u + n)} />`)}
      <${ErrorBox} error=${unplaced} />
      ${save.error && !unplaced ? html`<p class="field-error" role="alert">Some values were refused: see the messages next to them.</p>` : null}
      <div class="toolbar">
        <button type="submit" class="primary" disabled=${save.busy || uploading > 0}>${save.busy ? "Saving…" : uploading ? "Uploading…" : "Save"}</button>
        <button type="button" onClick=${cancel} aria-keyshortcuts="Escape">Cancel</button>
      </div>
    </form>
  </section>`;
}

function Children({ record }) {
  const counts = Object.entries(record.child_counts || {});
  if (!counts.length) return null;
  return html`<section aria-labelledby="children-h"><h2 id="children-h">Children</h2><ul class="plain">
    ${counts.map(([schema, n]) => html`<li><a href=${href("/c/" + seg(record.collection), { schema, parent: record.id })}>
      ${counted(n, schema, `${schema} records`)}</a></li>`)}</ul></section>`;
}

function Referrers({ record }) {
  const state = useLoad((signal) => get(`/records/${enc(record.id)}/referrers`, {}, { signal }), [record.id]);
  const items = state.data ? (Array.isArray(state.data) ? state.data : state.data.items || []) : [];
  return html`<section aria-labelledby="referrers-h"><h2 id="referrers-h">Referenced by</h2>
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${state.loading ? html`<${Loading} />` : items.length ? html`<ul class="plain">${items.map((r) => html`<li>
      <a href=${href("/r/" + seg(r.id))}>${r.natural_name || r.id}</a> <span class="muted">${r.schema_name}${r.collection ? " · " + r.collection : ""}</span></li>`)}</ul>`
      : html`<p class="muted">No record references this one.</p>`}
  </section>`;
}

function DeletedAround({ record, schema, reload }) {
  const above = useAction(() => post(`/records/${enc(record.id)}/restore-above`));
  const field = useAction((id) => post(`/schemas/${enc(schema.name)}/fields/${enc(id)}/restore`));
  const restore = useAction(() => post(`/records/${enc(record.id)}/restore`));
  const plan = useLoad((signal) => record.deleted_at ? get(`/records/${enc(record.id)}/restore-plan`, {}, { signal }) : null, [record.id, record.deleted_at]);
  return html`
    ${record.deleted_at ? html`<div class="warn-box" role="status">
      <p>This record was deleted ${formatTime(record.deleted_at)}.</p>
      ${plan.data ? html`<${PlanText} plan=${plan.data} />` : null}
      <button type="button" onClick=${async () => { if (await restore.run()) { notify("Restored", "ok"); reload(); } }}>Restore this record</button>
      <${ErrorBox} error=${restore.error} /></div>` : null}
    ${(record.deleted_above || []).length ? html`<div class="warn-box" role="status">
      <p>Out of sight: deleted above it are ${record.deleted_above.map((a, i) => html`${i ? ", " : ""}<a href=${href("/r/" + seg(a.id))}>${a.natural_name || a.id}</a>`)}.</p>
      <button type="button" onClick=${async () => { if (await above.run()) { notify("Restored what was above", "ok"); reload(); } }}>Restore the records above</button>
      <${ErrorBox} error=${above.error} /></div>` : null}
    ${(record.deleted_fields || []).length ? html`<div class="warn-box"><p>Values of deleted fields:</p><ul class="plain">
      ${record.deleted_fields.map((f) => html`<li>${f.label || f.name}: ${JSON.stringify(f.value)}
        <button type="button" onClick=${async () => { if (await field.run(f.field_id)) { notify(`Field ${f.name} restored`, "ok"); reload(); } }}>Restore field ${f.name}</button></li>`)}</ul>
      <${ErrorBox} error=${field.error} /></div>` : null}`;
}

// Delete: the referrers are asked first (GET /records/{id}/referrers); when records point at it
// the person chooses what happens to their references (lib/delete-referenced.js), then live
// children, if any, are confirmed as before (force).
function DeleteRecord({ record }) {
  const [asking, setAsking] = useState(null);  // {force, references, referrers: counts or null}
  const open = useAction(async () => {
    const counts = referrerCounts(await get(`/records/${enc(record.id)}/referrers`));
    setAsking({ force: false, references: null, referrers: Object.keys(counts).length ? counts : null });
    return true;
  });
  const remove = async (force, references) => {
    try { await del(`/records/${enc(record.id)}`, { force: force || undefined, references: references || undefined }); }
    catch (e) {
      const counts = countsFromError(e);
      if (counts && !references) { setAsking({ force, references: null, referrers: counts }); return undefined; }
      if (e.status === 409 && !counts && !force) { setAsking({ force: true, references, referrers: null }); return undefined; }
      throw e;
    }
    notify("Deleted: restore it from Recently deleted", "ok");
    navigate("/trash");
    return true;
  };
  return html`<button type="button" class="danger" disabled=${open.busy} onClick=${() => open.run()}>Delete record…</button>
    <${ErrorBox} error=${open.error} />
    ${asking && asking.referrers ? html`<${ReferencedChoice} counts=${asking.referrers} what="this record"
      onClose=${() => setAsking(null)} onChoose=${(choice) => remove(asking.force, choice)} />` : null}
    ${asking && !asking.referrers ? html`<${Confirm} title="Delete this record?" danger=${true} confirmLabel=${asking.force ? "Delete with its children" : "Delete"}
      message=${asking.force ? "This record has children; they are deleted with it, in one batch you can restore from Recently deleted."
        : "It goes to Recently deleted, where it can be restored."}
      onClose=${() => setAsking(null)}
      onConfirm=${() => remove(asking.force, asking.references)} />` : null}`;
}

export default function RecordPage({ params }) {
  const id = params.record;
  const state = useLoad(async (signal) => {
    const record = await get(`/records/${enc(id)}`, {}, { signal });
    const schema = await get(`/schemas/${enc(record.schema_name)}`, {}, { signal });
    return { record, schema };
  }, [id]);
  const history = useLoad((signal) => get(`/records/${enc(id)}/audit`, { limit: 50 }, { signal }), [id, state.data && state.data.record.updated_at]);
  useTitle(state.data ? state.data.record.natural_name || id : "Record");
  if (state.loading && !state.data) return html`<${Loading} />`;
  if (state.error && !state.data) return html`<section class="page"><h1>Record</h1><${ErrorBox} error=${state.error} onRetry=${state.reload} /></section>`;
  const { record, schema } = state.data;
  const entries = history.data ? history.data.items || history.data : [];
  return html`<section class="page record-page">
    <${Breadcrumb} record=${record} />
    <div class="page-head"><h1>${record.natural_name || record.id}</h1>
      <span class="muted">${schema.label || schema.name} · <code title=${record.id}>${record.id.slice(-8)}</code></span>
      <div class="actions">${record.deleted_at ? null : html`<${DeleteRecord} record=${record} />`}</div></div>
    <p class="muted">Created ${formatTime(record.created_at)} · changed ${formatTime(record.updated_at)}</p>
    <${SyncNotice} key=${record.id} recordId=${record.id} version=${record.updated_at} />
    <${DeletedAround} record=${record} schema=${schema} reload=${state.reload} />
    <div class="record-columns">
      <div><${Values} key=${record.updated_at} record=${record} schema=${schema}
        onSaved=${(saved) => state.setData({ record: { ...record, ...saved }, schema })} /></div>
      <div><${Children} record=${record} /><${Referrers} record=${record} /></div>
    </div>
    <section aria-labelledby="history-h"><h2 id="history-h">History</h2>
      <${ErrorBox} error=${history.error} onRetry=${history.reload} />
      ${history.loading && !history.data ? html`<${Loading} />` : html`<${EntryList} entries=${entries} />`}
    </section>
  </section>`;
}
