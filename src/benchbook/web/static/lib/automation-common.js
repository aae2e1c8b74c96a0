// Pieces shared by the automation pages: the run status badge and the automation switch.
import { html } from "./html.js";
import { get, post } from "./api.js";
import { useLoad, useAction, ErrorBox, notify } from "./ui.js";
import { counted, formatCount } from "./counting.js";
import { pokeStatus } from "./status.js";

export function StatusBadge({ status }) {
  const kind = status === "completed" ? "succeeded" : status;
  return html`<span class=${"badge " + kind}>${status}</span>`;
}

// Paused or running, with the queue's counts and the button that flips it (docs/automation.md *The switch*).
export function AutomationSwitch() {
  const state = useLoad((signal) => get("/automation", {}, { signal }), []);
  const flip = useAction(async (paused) => {
    const r = await post(paused ? "/automation/resume" : "/automation/stop");
    state.setData(r);
    pokeStatus();
    notify(paused ? "Automation resumed" : `Automation paused${r.cancelled ? ` (${counted(r.cancelled, "run cancelled", "runs cancelled")})` : ""}`, "ok");
    return r;
  });
  const a = state.data;
  return html`<div class="card switch" aria-label="Automation switch">
    <${ErrorBox} error=${state.error || flip.error} onRetry=${state.reload} />
    ${a ? html`<p><strong data-testid="automation-state">${a.paused ? "Paused" : "Running"}</strong>
      <span class="muted"> · ${formatCount(a.pending)} waiting · ${formatCount(a.running)} running</span></p>
      <p class="muted">${a.paused ? "While paused, edits start no workflow and waiting runs stay waiting." : "Edits start the workflows that watch them."}</p>
      <button type="button" class=${a.paused ? "primary" : ""} disabled=${flip.busy} onClick=${() => flip.run(a.paused)}>
        ${a.paused ? "Resume automation" : "Pause automation"}</button>` : null}
  </div>`;
}
