// Deleting records that live records point at (docs/deletes.md). The API refuses such a delete
// with 409 unless told what to do with the references; this dialog asks the person: delete
// anyway (`references=keep`: they point at a deleted record until it is restored), clear the
// references (`references=clear`: one update per referrer, in the delete's batch), or cancel.
import { html, useState } from "./html.js";
import { post } from "./api.js";
import { href } from "./router.js";
import { Modal, useAction, ErrorBox, Confirm } from "./ui.js";
import { counted } from "./counting.js";

// {schema name: how many} of the records GET /records/{id}/referrers lists.
export function referrerCounts(records) {
  const counts = {};
  for (const r of records || []) counts[r.schema_name] = (counts[r.schema_name] || 0) + 1;
  return counts;
}

// The same counts from a 409's `errors` (one `referenced` entry per schema), or null when the
// 409 was about something else (live children, a taken key).
export function countsFromError(error) {
  const entries = (error && error.status === 409 && error.errors || []).filter((e) => e && e.type === "referenced");
  if (!entries.length) return null;
  return Object.fromEntries(entries.map((e) => [e.ctx.schema_name, e.ctx.records]));
}

// `counts` from one of the two above; `what` names what is deleted ("this record");
// `onChoose("keep" | "clear")` deletes and resolves to something (undefined keeps it open).
export function ReferencedChoice({ counts, what, onChoose, onClose }) {
  const action = useAction(onChoose);
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const choose = (choice) => async () => { if (await action.run(choice) !== undefined) onClose(); };
  return html`<${Modal} title="Other records point at this" onClose=${onClose}>
    <div class="dialog-body">
      <p><strong>${counted(total, "record")} point${total === 1 ? "s" : ""} at ${what}</strong>:</p>
      <ul class="plain referrer-counts">${Object.entries(counts).map(([schema, n]) => html`<li>${counted(n, schema)}</li>`)}</ul>
      <p><em>Delete anyway</em> keeps their references, shown as deleted until it is restored.
        <em>Clear references</em> empties them in the same step (restoring puts them back).</p>
    </div>
    <${ErrorBox} error=${action.error} />
    <footer class="dialog-foot">
      <button type="button" onClick=${onClose}>Cancel</button>
      <button type="button" disabled=${action.busy} onClick=${choose("clear")}>Clear references and delete</button>
      <button type="button" class="danger" disabled=${action.busy} onClick=${choose("keep")}>
        ${action.busy ? "Working…" : "Delete anyway"}</button>
    </footer>
  <//>`;
}

// The records table's "Delete selected…": a bulk delete of `ids` (records of `schema`); when live
// records point at some of them (the 409's counts) the choice above, then the same bulk delete
// with `references`. `onDone(result)` after a delete.
export function DeleteSelected({ ids, schema, onDone, onClose }) {
  const [counts, setCounts] = useState(null);
  const remove = async (references) => {
    const r = await post("/records/bulk-delete", references ? { ids, references } : { ids });
    onDone(r);
    return r;
  };
  if (counts) {
    return html`<${ReferencedChoice} counts=${counts} what=${`the ${counted(ids.length, `ticked ${schema} record`)}`}
      onChoose=${remove} onClose=${onClose} />`;
  }
  return html`<${Confirm} title="Delete records" danger confirmLabel=${`Delete ${counted(ids.length, "record")}`}
    message=${html`<p>Delete the ${counted(ids.length, `ticked ${schema} record`)}? ${ids.length === 1 ? "It goes" : "They go"} to <a href=${href("/trash")}>Recently deleted</a>,
      from where ${ids.length === 1 ? "it" : "they"} can be restored.</p>`}
    onConfirm=${async () => {
      try { return await remove(null); }
      catch (e) {
        const found = countsFromError(e);
        if (!found) throw e;
        setCounts(found);
        return undefined;
      }
    }} onClose=${onClose} />`;
}
