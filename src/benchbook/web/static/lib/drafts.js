// Unsaved workflow files kept in this browser (localStorage), so a draft outlives leaving the
// page, a reload or a closed tab: one entry per workflow name, {text, saved_at}.
const PREFIX = "benchbook.workflow-draft.";

function store() {
  try { return window.localStorage; } catch { return null; }
}

export function loadDraft(name) {
  const s = store();
  if (!s) return null;
  try { return JSON.parse(s.getItem(PREFIX + name) || "null"); } catch { return null; }
}

export function saveDraft(name, text) {
  const s = store();
  if (s) try { s.setItem(PREFIX + name, JSON.stringify({ text, saved_at: new Date().toISOString() })); } catch { /* full: keep going */ }
}

export function dropDraft(name) {
  const s = store();
  if (s) s.removeItem(PREFIX + name);
}

// The names of the workflows with a draft here, sorted.
export function draftNames() {
  const s = store();
  if (!s) return [];
  const out = [];
  for (let i = 0; i < s.length; i++) {
    const key = s.key(i);
    if (key && key.startsWith(PREFIX)) out.push(key.slice(PREFIX.length));
  }
  return out.sort();
}
