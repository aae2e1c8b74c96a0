// Shared pieces of every page: data loading, loading and error states, labelled form fields,
// dialogs, notices and value formatting. Errors are shown in place (role="alert"), so the rest of
// the page stays usable.
import { html, useState, useEffect, useRef, useCallback } from "./html.js";
import { ApiError } from "./api.js";

// Runs `load(signal)` whenever `deps` change: {data, error, loading, reload, setData}. A newer load
// aborts the older one, so a slow answer never overwrites a newer one.
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: undefined, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true, error: null }));
    Promise.resolve()
      .then(() => load(controller.signal))
      .then((data) => { if (!controller.signal.aborted) setState({ data, error: null, loading: false }); })
      .catch((error) => { if (!controller.signal.aborted) setState((s) => ({ ...s, error, loading: false })); });
    return () => controller.abort();
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  const setData = useCallback((data) => setState((s) => ({ ...s, data })), []);
  return { ...state, reload, setData };
}

// Runs an action (a click's request): {run, busy, error, clear}. `run(...args)` resolves to the
// action's result, or undefined when it failed (the error is kept for showing in place).
export function useAction(action) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = async (...args) => {
    setBusy(true);
    setError(null);
    try { return await action(...args); }
    catch (e) { setError(e); return undefined; }
    finally { setBusy(false); }
  };
  return { run, busy, error, clear: () => setError(null) };
}

export function Loading({ label = "Loading…" }) {
  return html`<p class="loading" role="status" aria-live="polite">${label}</p>`;
}

export function ErrorBox({ error, onRetry, children }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  return html`<div class="error-box" role="alert">
    <strong>${error.status ? `Error ${error.status}: ` : "Error: "}</strong>${message}${children}
    ${onRetry && html` <button type="button" class="link" onClick=${onRetry}>Try again</button>`}
  </div>`;
}

let nextId = 0;
export function useId(prefix = "f") {
  const ref = useRef(null);
  if (ref.current === null) ref.current = `${prefix}-${++nextId}`;
  return ref.current;
}

// A labelled control. `children` is a function (id, describedBy) => the control, so the label,
// hint and error are tied to it for assistive technology.
export function Field({ label, error, hint, children, className = "" }) {
  const id = useId("field");
  const hintId = hint ? id + "-hint" : undefined;
  const errorId = error ? id + "-error" : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(" ") || undefined;
  return html`<div class=${"field " + className + (error ? " invalid" : "")}>
    <label for=${id}>${label}</label>
    ${children(id, describedBy, !!error)}
    ${hint && html`<small id=${hintId} class="hint">${hint}</small>`}
    ${error && html`<small id=${errorId} class="field-error" role="alert">${error}</small>`}
  </div>`;
}

// A region that may scroll (a wide table, a long log): keyboard users reach it with Tab and
// scroll it with the arrow keys, and a screen reader announces it by `label` (axe
// scrollable-region-focusable). `className` defaults to the tables' wrapper.
export function ScrollRegion({ label, className = "table-wrap", children }) {
  return html`<div class=${className} role="region" aria-label=${label} tabindex="0">${children}</div>`;
}

// The first field of a dialog's body (not its header's Close button), where typing starts.
const FIRST_FIELD = ["input:not([type=hidden]):not([disabled])", "select:not([disabled])", "textarea:not([disabled])"]
  .map((s) => `:is(.dialog-body, form) ${s}`).join(", ");

// A modal dialog (native <dialog>: focus stays inside, Escape closes). It opens on its first
// field and, closed by any means, gives focus back to the control that opened it.
export function Modal({ title, onClose, children, wide = false }) {
  const ref = useRef(null);
  useEffect(() => {
    const dialog = ref.current;
    const opener = document.activeElement;
    if (dialog && !dialog.open) dialog.showModal();
    const first = dialog.querySelector(FIRST_FIELD);
    if (first) first.focus();
    const onCancel = (e) => { e.preventDefault(); onClose(); };
    dialog.addEventListener("cancel", onCancel);
    return () => {
      dialog.removeEventListener("cancel", onCancel);
      if (dialog.open) dialog.close(); // before it leaves the page: a removed open dialog takes focus with it
      if (opener && opener !== document.body && opener.isConnected && typeof opener.focus === "function") opener.focus();
    };
  }, []);
  return html`<dialog ref=${ref} class=${wide ? "wide" : ""} aria-label=${title}>
    <header class="dialog-head"><h2>${title}</h2>
      <button type="button" class="icon" aria-label="Close" onClick=${onClose}>×</button></header>
    ${children}
  </dialog>`;
}

// A confirmation step for something that cannot be undone: the action runs on "confirm".
export function Confirm({ title, message, confirmLabel = "Confirm", danger = false, onConfirm, onClose }) {
  const action = useAction(onConfirm);
  return html`<${Modal} title=${title} onClose=${onClose}>
    <div class="dialog-body">${message}</div>
    <${ErrorBox} error=${action.error} />
    <footer class="dialog-foot">
      <button type="button" onClick=${onClose}>Cancel</button>
      <button type="button" class=${danger ? "danger" : "primary"} disabled=${action.busy}
        onClick=${async () => { const r = await action.run(); if (r !== undefined) onClose(); }}>
        ${action.busy ? "Working…" : confirmLabel}</button>
    </footer>
  <//>`;
}

// Notices ("Saved", "Restored 3 records") shown briefly in the status bar's live region.
const listeners = new Set();
export function notify(message, kind = "info") {
  for (const listener of listeners) listener({ message, kind, at: Date.now() });
}
export function useNotices() {
  const [notice, setNotice] = useState(null);
  useEffect(() => {
    let timer;
    const listener = (n) => { setNotice(n); clearTimeout(timer); timer = setTimeout(() => setNotice(null), 6000); };
    listeners.add(listener);
    return () => { listeners.delete(listener); clearTimeout(timer); };
  }, []);
  return notice;
}

export function useTitle(title) {
  useEffect(() => { document.title = title ? `${title} · benchbook` : "benchbook"; }, [title]);
}

// ---------------------------------------------------------------- formatting
export function formatValue(value, dtype) {
  if (value === null || value === undefined) return "";
  if (Array.isArray(value)) return value.map((v) => formatValue(v, dtype)).join(", ");
  if (typeof value === "object") {
    if (value.name && value.sha256) return value.name;
    if (value.label) return value.label;
    return JSON.stringify(value);
  }
  if (dtype === "boolean" || typeof value === "boolean") return value ? "yes" : "no";
  if (dtype === "datetime" && typeof value === "string") return formatTime(value);
  return String(value);
}

export function formatTime(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
}

export { formatCount } from "./counting.js";

export function formatBytes(n) {
  if (n === null || n === undefined) return "";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export const isApiError = (e) => e instanceof ApiError;
