// Automation (#/automation): the switch, workflows with their problems (a file that fails to
// load is listed with its errors), failure groups, plugins, and a new workflow.
import { html, useState } from "../lib/html.js";
import { get } from "../lib/api.js";
import { href, navigate, seg } from "../lib/router.js";
import { useLoad, Loading, ErrorBox, Field, Modal, useTitle, formatCount } from "../lib/ui.js";
import { AutomationSwitch } from "../lib/automation-common.js";
import { draftNames } from "../lib/drafts.js";

function NewWorkflow({ onClose }) {
  const [name, setName] = useState("");
  return html`<${Modal} title="New workflow" onClose=${onClose}>
    <form class="dialog-body" onSubmit=${(e) => { e.preventDefault(); if (name) navigate("/automation/workflows/" + seg(name), { new: 1 }); }}>
      <${Field} label="Workflow name" hint="Its file is workflows/<name>.yaml in the project.">${(id, d) => html`<input id=${id}
        aria-describedby=${d} required value=${name} onInput=${(e) => setName(e.target.value)} />`}<//>
      <footer class="dialog-foot"><button type="button" onClick=${onClose}>Cancel</button><button type="submit" class="primary">Write it</button></footer>
    </form><//>`;
}

export default function Automation() {
  useTitle("Automation");
  const [creating, setCreating] = useState(false);
  const workflows = useLoad((signal) => get("/workflows", {}, { signal }), []);
  const groups = useLoad((signal) => get("/jobs/failure-groups", {}, { signal }), []);
  const plugins = useLoad((signal) => get("/plugins", {}, { signal }), []);
  return html`<section class="page automation">
    <div class="page-head"><h1>Automation</h1><div class="actions">
      <a class="button" href=${href("/automation/runs")}>Runs</a>
      <button type="button" class="primary" onClick=${() => setCreating(true)}>New workflow</button></div></div>
    <${AutomationSwitch} />
    <section aria-labelledby="wf-h"><h2 id="wf-h">Workflows</h2>
      <${ErrorBox} error=${workflows.error} onRetry=${workflows.reload} />
      ${workflows.loading && !workflows.data ? html`<${Loading} />` : html`<ul class="cards" aria-label="workflows">
        ${(workflows.data || []).map((w) => html`<li class="card" key=${w.name}>
          <h3><a href=${href("/automation/workflows/" + seg(w.name))}>${w.name}</a></h3>
          ${w.description ? html`<p>${w.description}</p>` : null}
          <p class="muted">${w.record_schema || "?"} · ${Object.keys(w.triggers || {}).join(", ") || "no trigger"}</p>
          ${(w.problems || []).length ? html`<ul class="problems" aria-label=${"problems of " + w.name}>${w.problems.map((p) =>
            html`<li class="error">${typeof p === "string" ? p : p.msg || p.message || JSON.stringify(p)}</li>`)}</ul>` : null}
          <p><a href=${href("/automation/runs", { workflow: w.name })}>Its runs</a></p></li>`)}
        ${workflows.data && !workflows.data.length ? html`<li class="muted">No workflows yet.</li>` : null}</ul>`}
      ${workflows.data ? html`<${Drafts} saved=${new Set(workflows.data.map((w) => w.name))} />` : null}
    </section>
    <section aria-labelledby="fg-h"><h2 id="fg-h">Failures</h2>
      <${ErrorBox} error=${groups.error} onRetry=${groups.reload} />
      ${groups.data && groups.data.length ? html`<ul class="plain">${groups.data.map((g) => html`<li>
        <a href=${href("/automation/runs", { status: "failed", workflow: g.workflow_name || g.workflow || undefined })}>
          ${formatCount(g.count)} × ${g.workflow_name || g.workflow || ""}</a> <span class="muted" title=${g.example ? "e.g. " + g.example : undefined}>${g.message || ""}</span></li>`)}</ul>`
        : groups.data ? html`<p class="muted">No failed runs.</p>` : null}
    </section>
    <section aria-labelledby="pl-h"><h2 id="pl-h">Plugins</h2>
      <${ErrorBox} error=${plugins.error} onRetry=${plugins.reload} />
      ${plugins.data ? html`<ul class="plain">${plugins.data.map((p) => html`<li><strong>${p.name || p.id}</strong> <code>${p.id}</code>
        ${p.description ? html` <${Description} text=${p.description} />` : null}</li>`)}</ul>` : null}
    </section>
    ${creating ? html`<${NewWorkflow} onClose=${() => setCreating(false)} />` : null}
  </section>`;
}

// A plugin's description: whole when short; else its first words up to a word's end, "…", and
// the rest behind "more" (never cut mid-word).
export function shorten(text, max = 140) {
  const t = String(text).replace(/\s+/g, " ").trim();
  if (t.length <= max) return t;
  const cut = t.slice(0, max + 1).replace(/\s+\S*$/, "");
  return (cut || t.slice(0, max)).replace(/[\s,;:.]+$/, "") + "…";
}

function Description({ text }) {
  const short = shorten(text);
  if (short === text.replace(/\s+/g, " ").trim()) return html`<span class="muted">${short}</span>`;
  return html`<details class="plugin-description"><summary class="muted">${short}</summary><p class="muted">${text}</p></details>`;
}

// Workflows written here and not saved yet (new ones, or changes to saved ones), to go back to.
function Drafts({ saved }) {
  const names = draftNames();
  if (!names.length) return null;
  return html`<p class="drafts" data-testid="drafts">Unsaved drafts in this browser:${" "}
    ${names.map((n, i) => html`${i ? ", " : ""}<a href=${href("/automation/workflows/" + seg(n))}>${n}</a>${saved.has(n) ? " (changes)" : " (new)"}`)}</p>`;
}
