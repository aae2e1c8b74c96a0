// Sync conflicts (#/remote/conflicts?status=resolved&record=<id>; docs/sync.md *Rows and how to
// resolve them*): the rows syncs left on this device, each with yours / theirs / base side by
// side, its kind and message in plain words, a link to its record, and one-click resolutions;
// a 409 (the field changed here since) offers "Set anyway". Resolved rows are shown read-only.
import { html, useState } from "../lib/html.js";
import { get, post, enc } from "../lib/api.js";
import { href, seg } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, notify, useTitle, formatValue } from "../lib/ui.js";
import { Changes } from "../lib/entries.js";
import { pokeStatus } from "../lib/status.js";
import { counted } from "../lib/counting.js";
import { PARENT, kindWords, resolutionWords, namesOf, subjectOf, SyncError } from "../lib/sync.js";

// The buttons a row's kind offers: [label, take, what it does].
function choices(row) {
  const record = row.entity_type === "record";
  if (row.kind === "conflict") {
    return [["Keep theirs", "theirs", "leave the authority's value"],
      ["Keep mine", "mine", "set your value again; it is sent at the next sync"]];
  }
  if (row.kind === "rejected") {
    return [["Retry", "retry", "send the change again at the next sync, once what was refused is fixed"],
      ["Dismiss", "theirs", "close this row without sending the change again (what you made stays on this device only)"]];
  }
  if (row.attempted === "delete") {
    return [["Accept", "theirs", "keep it, with the authority's edit"],
      ["Delete", "delete", "delete it anyway; the delete is sent at the next sync"]];
  }
  return [["Accept", "theirs", "let it stay deleted"],
    ...(record ? [["Restore with my edit", "restore_above", "bring it back, with what was deleted above it, and make your edit again"]] : [])];
}

const sentence = (text) => text[0].toUpperCase() + text.slice(1) + (/[.!?]$/.test(text) ? "" : ".");

// One side's value: a move's record by name and linked, "(empty)" for nothing.
function Value({ row, value, names }) {
  if (value === null || value === undefined || value === "") return html`<span class="muted">(empty)</span>`;
  if (row.field === PARENT) return html`<a href=${href("/r/" + seg(value))}>${names[value] || "a record"}</a>`;
  return html`${formatValue(value)}`;
}

// Yours, theirs and base next to each other.
function Sides({ row, names }) {
  if (!row.field && row.yours == null && row.theirs == null && row.base == null) return null;
  const sides = [["Yours", row.yours, "yours"], [`Theirs${row.theirs_actor ? ` (${row.theirs_actor})` : ""}`, row.theirs, "theirs"],
    ["Base (before both)", row.base, "base"]];
  return html`<dl class="sides">${sides.map(([label, value, cls]) => html`<div class=${cls}>
    <dt>${label}</dt><dd data-side=${cls}><${Value} row=${row} value=${value} names=${names} /></dd></div>`)}</dl>`;
}

// One row: what it is about (linked), its kind and message, the sides, what was changed, and
// its resolutions (open rows only); a 409 offers "Set anyway".
function Row({ row, names, onDone }) {
  const [stale, setStale] = useState(null);  // {take, message}: the field changed here since
  const resolve = useAction(async (take, force = false) => {
    try {
      const done = await post(`/remote/conflicts/${enc(row.id)}/resolve`, force ? { take, force: true } : { take });
      setStale(null);
      notify(`Resolved: ${resolutionWords(done)}`, "ok");
      pokeStatus();
      onDone();
      return done;
    } catch (e) {
      if (e.status === 409 && !force) { setStale({ take, message: e.message }); return undefined; }
      throw e;
    }
  });
  const subject = subjectOf(row, names);
  const open = row.status === "open";
  const what = row.field_label ? `${subject} › ${row.field_label}` : subject;
  return html`<li class="card conflict-row" data-testid="conflict-row" data-kind=${row.kind} data-status=${row.status}>
    <h2 class="conflict-head">
      ${row.entity_type === "record" ? html`<a href=${href("/r/" + seg(row.entity_id))}>${subject}</a>` : subject}
      ${row.field_label ? html` <span class="muted">› ${row.field_label}</span>` : null}</h2>
    <p><span class=${"badge " + (open ? "pending" : "ok")}>${kindWords(row)}</span>
      ${open ? null : html` <span data-testid="resolution">Resolved: ${resolutionWords(row)}</span>`}</p>
    ${row.message ? html`<p class="conflict-message">${sentence(row.message)}</p>` : null}
    <${Sides} row=${row} names=${names} />
    ${row.changes && row.changes.length ? html`<details class="conflict-changes" open=${row.kind !== "conflict"}>
      <summary>${row.attempted === "delete" ? "What the authority changed" : "What you changed"}</summary>
      <${Changes} entry=${{ changes: row.changes }} /></details>` : null}
    ${open ? html`<div class="toolbar" role="group" aria-label=${"Resolve " + what}>
      ${choices(row).map(([label, take, hint]) => html`<button type="button" disabled=${resolve.busy}
        class=${take === "delete" ? "danger" : ""} onClick=${() => resolve.run(take)}>${label}</button>`)}
    </div>
    <ul class="conflict-hints muted">${choices(row).map(([label, , hint]) => html`<li><strong>${label}</strong>: ${hint}</li>`)}</ul>` : null}
    ${stale ? html`<div class="warn-box" role="alert" data-testid="stale">
      <p>${stale.message}</p>
      <div class="toolbar"><button type="button" class="primary" disabled=${resolve.busy}
        onClick=${() => resolve.run(stale.take, true)}>Set anyway</button>
        <button type="button" onClick=${() => setStale(null)}>Cancel</button></div></div>` : null}
    <${SyncError} what="Could not resolve it" error=${resolve.error} />
  </li>`;
}

// The Conflicts page: open rows (or resolved ones, read-only), optionally those of one record.
export default function Conflicts({ query }) {
  const status = query.status === "resolved" ? "resolved" : "open";
  useTitle(status === "open" ? "Sync conflicts" : "Resolved sync conflicts");
  const state = useLoad(async (signal) => {
    const rows = await get("/remote/conflicts", { status, record_id: query.record }, { signal });
    return { rows, names: await namesOf(rows, signal) };
  }, [status, query.record]);
  const rows = state.data ? state.data.rows : [];
  const names = state.data ? state.data.names : {};
  const tab = (value, label) => html`<a href=${href("/remote/conflicts", { status: value === "open" ? undefined : value, record: query.record })}
    aria-current=${status === value ? "page" : undefined}>${label}</a>`;
  return html`<section class="page conflicts">
    <p><a href=${href("/remote")}>← Sync</a></p>
    <div class="page-head"><h1>Sync conflicts</h1>
      ${state.data ? html`<span class="muted" data-testid="conflict-count">${counted(rows.length, status === "open" ? "open row" : "resolved row")}</span>` : null}</div>
    <p class="muted">What syncs could not settle alone: a field changed on both sides (this project shows the authority's value
      until you answer), a change the authority refused (kept here as you made it), an edit that met a delete.</p>
    <nav class="tabs" aria-label="Open or resolved">${tab("open", "Open")}${tab("resolved", "Resolved")}</nav>
    ${query.record ? html`<p>Only the rows about ${names[query.record] || "one record"}.
      <a href=${href("/remote/conflicts", { status: status === "open" ? undefined : status })}>Show every row</a></p>` : null}
    <${ErrorBox} error=${state.error} onRetry=${state.reload} />
    ${state.loading && !state.data ? html`<${Loading} />` : rows.length
      ? html`<ul class="plain conflict-list" aria-label=${status === "open" ? "open conflicts" : "resolved conflicts"}>
        ${rows.map((r) => html`<${Row} key=${r.id} row=${r} names=${names} onDone=${state.reload} />`)}</ul>`
      : html`<p class="muted" data-testid="no-conflicts">${status === "open" ? "Nothing to resolve: every sync settled." : "No resolved rows yet."}</p>`}
  </section>`;
}
