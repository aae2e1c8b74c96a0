// Background work for the status bar (docs/web.md, `lib/status.js`): uploads started in this page (with their
// progress), the run queue (GET /automation: waiting, running, and the current stretch's
// succeeded/failed/cancelled counts, failures counting as done) and the history conversion
// (GET /audit/storage). The bar polls while something is under way, slowly otherwise.
// When a stretch of runs ends (GET /automation's batch turns null) the bar keeps its outcome,
// counted by GET /jobs/count over the runs that finished since it began (the stretch's own
// rule, runner/switch.py), until the user dismisses it or another stretch begins: runs that
// all finish between two polls are reported too.
// Sync (docs/sync.md), read by the same poll (GET /remote): when the project follows an
// authority, its last sync, the changes waiting to be sent, the open conflicts (a link to the
// Conflicts page) and the last sync's error; nothing when it follows none.
import { html, useEffect, useState } from "./html.js";
import { ApiError, get } from "./api.js";
import { useNotices, formatBytes, formatTime } from "./ui.js";
import { href } from "./router.js";
import { counted, formatCount } from "./counting.js";

const uploads = new Map();
const listeners = new Set();
let nextUpload = 0;
const changed = () => listeners.forEach((l) => l());

// POST a FormData with upload progress shown in the status bar (and given to `onProgress(loaded,
// total)` in bytes, for a control's own bar); resolves to the JSON answer, rejects with ApiError
// (status 0 when the server cannot be reached).
export function upload(path, form, label, onProgress = () => {}) {
  const id = ++nextUpload;
  uploads.set(id, { label, loaded: 0, total: 0 });
  changed();
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api" + path);
    xhr.setRequestHeader("accept", "application/json");
    xhr.upload.onprogress = (e) => { uploads.set(id, { label, loaded: e.loaded, total: e.total }); changed(); onProgress(e.loaded, e.total); };
    const done = () => { uploads.delete(id); changed(); };
    xhr.onload = () => {
      done();
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch { body = null; }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body);
      else reject(new ApiError(xhr.status, body, `${xhr.status} ${xhr.statusText}`));
    };
    xhr.onerror = () => { done(); reject(new ApiError(0, null, "The server cannot be reached: is `benchbook serve` still running?")); };
    xhr.send(form);
  });
}

// Ask the bar to poll quickly now (after starting runs, say).
export function pokeStatus() { listeners.forEach((l) => l(true)); }

const OUTCOMES = { succeeded: "completed", failed: "failed", cancelled: "cancelled" };

// The outcome of the stretch that began at `startedAt` (ISO time): {pending: 0, succeeded,
// failed, cancelled}, each counted over the runs that finished since then.
async function finishedStretch(startedAt) {
  const filter = JSON.stringify({ field: "finished_at", op: "gte", value: startedAt });
  const counts = await Promise.all(Object.values(OUTCOMES).map((status) => get("/jobs/count", { status, filter })));
  const outcome = { startedAt, pending: 0, done: true };
  Object.keys(OUTCOMES).forEach((key, i) => { outcome[key] = counts[i].count; });
  return outcome;
}

// The bar's items for a project that follows an authority (GET /remote's answer).
function syncItems(remote) {
  const out = [html`<a key="sync" href=${href("/remote")} data-testid="status-sync">
    ${remote.last_sync_at ? `Synced ${formatTime(remote.last_sync_at)}` : "Not synced yet"} · <span data-testid="status-pending">${counted(remote.pending, "change")} to send</span></a>`];
  if (remote.open_conflicts) {
    out.push(html`<a key="conflicts" href=${href("/remote/conflicts")} class="bad" data-testid="status-conflicts">
      ${counted(remote.open_conflicts, "open conflict")}</a>`);
  }
  if (remote.error) {
    out.push(html`<a key="sync-error" href=${href("/remote")} class="bad" data-testid="status-sync-error">Sync failed: ${remote.error}</a>`);
  }
  return out;
}

export function StatusBar() {
  const [, setTick] = useState(0);
  const [automation, setAutomation] = useState(null);
  const [finished, setFinished] = useState(null);
  const [storage, setStorage] = useState(null);
  const [remote, setRemote] = useState(null);
  const [offline, setOffline] = useState(false);
  const notice = useNotices();
  useEffect(() => {
    let timer;
    let stopped = false;
    let stretch = null;  // started_at of the stretch the last answer showed
    const poll = async () => {
      clearTimeout(timer);
      try {
        const [a, r] = await Promise.all([get("/automation"), get("/remote").catch(() => null)]);
        setAutomation(a);
        setRemote(r);
        setOffline(false);
        if (a.batch) { stretch = a.batch.started_at; setFinished(null); }
        else if (stretch) {
          const began = stretch;
          stretch = null;
          finishedStretch(began).then((outcome) => { if (!stopped) setFinished(outcome); }).catch(() => {});
        }
        const busy = a.pending > 0 || a.running > 0;
        let converting = false;
        if (!busy) {
          const s = await get("/audit/storage").catch(() => null);
          setStorage(s);
          converting = !!(s && s.converting);
        }
        if (!stopped) timer = setTimeout(poll, busy || converting ? 700 : 5000);
      } catch (error) {
        setOffline(error.status === 0);
        if (!stopped) timer = setTimeout(poll, 5000);
      }
    };
    const listener = (urgent) => { setTick((t) => t + 1); if (urgent) poll(); };
    listeners.add(listener);
    poll();
    return () => { stopped = true; clearTimeout(timer); listeners.delete(listener); };
  }, []);
  const batch = (automation && automation.batch) || finished;
  const items = [];
  if (offline) items.push(html`<span class="offline">Server unreachable: showing what was loaded; retrying…</span>`);
  if (automation && automation.paused) items.push(html`<a href=${href("/automation")}>Automation paused</a>`);
  if (batch) {
    const total = batch.pending + batch.succeeded + batch.failed + batch.cancelled;
    const done = total - batch.pending;
    items.push(html`<a href=${href("/automation/runs")} class="runs" data-testid="status-runs">
      <span>Runs ${formatCount(done)} of ${formatCount(total)} done</span>
      <progress max=${total || 1} value=${done} aria-label="runs done"></progress>
      <span data-testid="status-waiting">${formatCount(batch.pending)} waiting</span>${" · "}<span
        data-testid="status-succeeded">${formatCount(batch.succeeded)} succeeded</span>${" · "}<span data-testid="status-failed" class=${batch.failed ? "bad" : ""}>${formatCount(batch.failed)} failed</span>
      ${batch.cancelled ? html` · <span>${formatCount(batch.cancelled)} cancelled</span>` : null}</a>`);
    if (batch.done) {
      items.push(html`<button type="button" class="link" aria-label="Dismiss the finished runs"
        onClick=${() => setFinished(null)}>×</button>`);
    }
  } else if (automation && (automation.pending || automation.running)) {
    items.push(html`<span>${counted(automation.pending, "run")} waiting, ${formatCount(automation.running)} running</span>`);
  }
  for (const [id, u] of uploads) {
    items.push(html`<span key=${"u" + id} class="upload">Uploading ${u.label}
      <progress max=${u.total || 1} value=${u.loaded} aria-label=${"upload of " + u.label}></progress>
      ${u.total ? `${formatBytes(u.loaded)} of ${formatBytes(u.total)}` : ""}</span>`);
  }
  if (remote && remote.url) items.push(...syncItems(remote));
  if (storage && storage.converting) {
    items.push(html`<a href=${href("/history/storage")}>Converting history ${formatCount(storage.done ?? 0)} of ${storage.total == null ? "?" : formatCount(storage.total)}</a>`);
  }
  return html`<footer class="status-bar" aria-label="Background work">
    <div class="status-items" role="status" aria-live="polite">${items.length ? items : html`<span class="muted">Idle</span>`}</div>
    <div class=${"notice " + (notice ? notice.kind : "")} role="status" aria-live="polite">${notice ? notice.message : ""}</div>
  </footer>`;
}
