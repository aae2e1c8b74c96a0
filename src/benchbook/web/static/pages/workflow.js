// One workflow (#/automation/workflows/<name>): its YAML in an editor, saved with PUT (every
// problem the server finds listed beside the text, with the line it points at), delete (409
// while runs wait; force behind a confirmation), and runs started by hand on chosen records.
// Unsaved text is kept as a draft in this browser (lib/drafts.js) and leaving with it asks first;
// a name with no workflow yet (a new one, or a draft's address visited again) opens the draft.
import { html, useEffect, useRef, useState } from "../lib/html.js";
import { get, put, post, del, enc } from "../lib/api.js";
import { href, navigate, seg } from "../lib/router.js";
import { useLoad, useAction, Loading, ErrorBox, Field, Confirm, notify, useTitle } from "../lib/ui.js";
import { counted, formatCount } from "../lib/counting.js";
import { pokeStatus } from "../lib/status.js";
import { loadDraft, saveDraft, dropDraft } from "../lib/drafts.js";

const LEAVE = "This workflow has unsaved changes. Leave the page? The draft stays in this browser until you save or discard it.";

// While `dirty`, closing or reloading the tab asks the browser's question, and following a link
// of the app asks ours first.
function useLeaveWarning(dirty) {
  useEffect(() => {
    if (!dirty) return undefined;
    const unload = (e) => { e.preventDefault(); e.returnValue = LEAVE; return LEAVE; };
    const click = (e) => {
      const a = e.target.closest && e.target.closest("a[href^='#']");
      if (a && a.getAttribute("href") !== location.hash && !window.confirm(LEAVE)) { e.preventDefault(); e.stopPropagation(); }
    };
    window.addEventListener("beforeunload", unload);
    document.addEventListener("click", click, true);
    return () => { window.removeEventListener("beforeunload", unload); document.removeEventListener("click", click, true); };
  }, [dirty]);
}

const TEMPLATE = (name) => `name: ${name}
description: What this workflow does.
record_schema: SCHEMA
triggers:
  manual: {}
steps:
  - id: first
    plugin: benchbook.set-fields
    config:
      fields: {}
`;

// The 1-based line a problem's loc (["body","content","steps",0,"plugin"]) points at, or null:
// the key's line within the nth item of the list it is under.
export function lineOf(text, loc) {
  const path = (loc || []).filter((p) => p !== "body" && p !== "content");
  const lines = text.split("\n");
  let from = 0;
  let found = null;
  for (let i = 0; i < path.length; i++) {
    const part = path[i];
    if (typeof part === "number") {
      let seen = -1;
      for (let j = from; j < lines.length; j++) {
        if (/^\s*-\s/.test(lines[j])) { seen++; if (seen === part) { from = j; found = j; break; } }
      }
    } else {
      const at = lines.findIndex((l, j) => j >= from && new RegExp(`^\\s*(-\\s+)?${part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s*:`).test(l));
      if (at < 0) break;
      from = at;
      found = at;
    }
  }
  return found === null ? null : found + 1;
}

function Editor({ name, content, isNew, onSaved }) {
  const [draft] = useState(() => { const d = loadDraft(name); return d && d.text !== content ? d : null; });
  const [text, setText] = useState(draft ? draft.text : content);
  const escaped = useRef(false);  // Escape, then Tab, moves the focus on (no keyboard trap)
  const dirty = text !== content;
  useEffect(() => { if (dirty) saveDraft(name, text); else dropDraft(name); }, [text]);
  useLeaveWarning(dirty);
  const save = useAction(async () => { const w = await put(`/workflows/${enc(name)}`, { content: text }); dropDraft(name); return w; });
  const problems = save.error && save.error.errors && save.error.errors.length ? save.error.errors : null;
  const lines = text.split("\n").length;
  return html`<form aria-label="Workflow file" onSubmit=${async (e) => { e.preventDefault(); const w = await save.run(); if (w) { notify("Workflow saved", "ok"); onSaved(w); } }}>
    <div class="editor">
      <div class="gutter" aria-hidden="true">${Array.from({ length: lines }, (_, i) => html`<div>${i + 1}</div>`)}</div>
      <label class="sr-only" for="wf-text">Workflow YAML</label>
      <textarea id="wf-text" class="code" spellcheck="false" rows=${Math.max(14, lines + 1)} value=${text}
        aria-invalid=${problems ? "true" : "false"} aria-describedby=${problems ? "wf-problems" : undefined}
        onInput=${(e) => setText(e.target.value)}
        onKeyDown=${(e) => {
          if (e.key === "Escape") { escaped.current = true; return; }
          if (e.key === "Tab" && !e.shiftKey && !escaped.current) { e.preventDefault(); const t = e.target; const at = t.selectionStart;
            setText(text.slice(0, at) + "  " + text.slice(t.selectionEnd)); requestAnimationFrame(() => { t.selectionStart = t.selectionEnd = at + 2; }); }
          escaped.current = false; }}></textarea>
    </div>
    ${problems ? html`<div id="wf-problems" class="error-box" role="alert"><strong>${counted(problems.length, "problem")}:</strong>
      <ul class="problems">${problems.map((p) => { const line = (p.ctx && p.ctx.line) || lineOf(text, p.loc); return html`<li data-line=${line || ""}>
        ${line ? html`<strong>line ${line}</strong> ` : null}<code>${(p.loc || []).filter((x) => x !== "body" && x !== "content").join(".")}</code>: ${p.msg}</li>`; })}</ul></div>`
      : html`<${ErrorBox} error=${save.error} />`}
    <div class="toolbar"><button type="submit" class="primary" disabled=${save.busy}>${isNew ? "Create workflow" : "Save workflow"}</button>
      ${dirty ? html`<button type="button" onClick=${() => { dropDraft(name); setText(content); notify("Draft discarded", "ok"); }}>Discard changes</button>` : null}
      <span class="muted">Tab indents by two spaces; Escape then Tab (or Shift+Tab) leaves the editor.</span></div>
    ${dirty ? html`<p class="muted" role="status" data-testid="draft-note">Unsaved changes${draft && text === draft.text
      ? ` (a draft from ${new Date(draft.saved_at).toLocaleString()})` : ""}: kept in this browser as a draft until you save or discard them.</p>` : null}
  </form>`;
}

function RunOn({ workflow }) {
  const [q, setQ] = useState("");
  const [found, setFound] = useState(null);
  const [ticked, setTicked] = useState(new Set());
  const find = useAction(async () => setFound(await get("/records", { schema: workflow.record_schema, search: q || undefined, limit: 50 })));
  const run = useAction(async () => {
    const ids = [...ticked];
    const r = ids.length === 1 ? await post(`/workflows/${enc(workflow.name)}/run`, { record_id: ids[0] })
      : await post(`/workflows/${enc(workflow.name)}/run-many`, { record_ids: ids });
    pokeStatus();
    notify(ids.length === 1 ? "Run started" : `${counted(r.started, "run started", "runs started")}${r.skipped && r.skipped.length ? `, ${formatCount(r.skipped.length)} skipped` : ""}`, "ok");
    return r;
  });
  if (!workflow.triggers || !("manual" in workflow.triggers)) {
    return html`<p class="muted">This workflow has no <code>manual</code> trigger, so it runs only when records change.</p>`;
  }
  return html`<section aria-labelledby="run-h" class="card"><h2 id="run-h">Run it on records</h2>
    <form class="toolbar" onSubmit=${(e) => { e.preventDefault(); find.run(); }}>
      <label for="run-q">Find ${workflow.record_schema} records</label>
      <input id="run-q" type="search" value=${q} onInput=${(e) => setQ(e.target.value)} />
      <button type="submit">Find</button></form>
    <${ErrorBox} error=${find.error || run.error} />
    ${found ? html`<ul class="plain run-targets">${found.map((r) => html`<li><label class="check"><input type="checkbox" checked=${ticked.has(r.id)}
      onChange=${() => { const s = new Set(ticked); s.has(r.id) ? s.delete(r.id) : s.add(r.id); setTicked(s); }} /> ${r.natural_name || r.id}</label></li>`)}</ul>
      <div class="toolbar"><button type="button" onClick=${() => setTicked(new Set(found.map((r) => r.id)))}>Tick all ${formatCount(found.length)}</button>
        <button type="button" class="primary" disabled=${!ticked.size || run.busy} onClick=${run.run}>Run on ${counted(ticked.size, "record")}</button></div>` : null}
  </section>`;
}

export default function Workflow({ params, query }) {
  const name = params.workflow;
  // No workflow of this name (yet): the page is its draft, whether or not the address says new.
  const state = useLoad((signal) => query.new ? Promise.resolve(null) : get(`/workflows/${enc(name)}`, {}, { signal })
    .catch((e) => { if (e.status === 404) return null; throw e; }), [name, query.new]);
  const isNew = !!query.new || state.data === null;
  const [asking, setAsking] = useState(null);
  useTitle(`Workflow ${name}`);
  if (state.loading && !state.data && !isNew) return html`<${Loading} />`;
  if (state.error && !state.data) return html`<section class="page"><h1>Workflow ${name}</h1><${ErrorBox} error=${state.error} onRetry=${state.reload} /></section>`;
  const w = state.data;
  return html`<section class="page workflow-page">
    <p><a href=${href("/automation")}>← Automation</a></p>
    <div class="page-head"><h1>${name}</h1>
      ${w ? html`<span class="muted">${w.record_schema} · ${Object.keys(w.triggers || {}).join(", ")}</span>
        <div class="actions"><a class="button" href=${href("/automation/runs", { workflow: name })}>Runs</a>
          <button type="button" class="danger" onClick=${() => setAsking({ force: false })}>Delete…</button></div>` : null}</div>
    ${isNew ? html`<p class="muted" data-testid="new-note">There is no workflow ${name} yet: write it below and press “Create workflow”.</p>` : null}
    ${w && (w.problems || []).length ? html`<div class="error-box" role="alert">This file does not load: ${w.problems.map((p) => typeof p === "string" ? p : p.msg).join("; ")}</div>` : null}
    <${Editor} key=${name + (w ? w.content : "")} name=${name} isNew=${isNew} content=${w ? w.content : TEMPLATE(name)}
      onSaved=${(saved) => { if (query.new) navigate("/automation/workflows/" + seg(name), {}, { replace: true }); else state.setData(saved); }} />
    ${w ? html`<${RunOn} workflow=${w} />` : null}
    ${asking ? html`<${Confirm} title=${`Delete workflow ${name}?`} danger=${true} confirmLabel=${asking.force ? "Delete and cancel its runs" : "Delete"}
      message=${asking.force ? "Runs of it wait or run: deleting cancels them." : "Its file is removed from workflows/; its past runs stay."}
      onClose=${() => setAsking(null)} onConfirm=${async () => {
        try { await del(`/workflows/${enc(name)}`, asking.force ? { force: true } : {}); }
        catch (e) { if (e.status === 409 && !asking.force) { setAsking({ force: true }); return undefined; } throw e; }
        notify(`Workflow ${name} deleted`, "ok"); navigate("/automation"); return true; }} />` : null}
  </section>`;
}
