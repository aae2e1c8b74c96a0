// Hash routing: the location hash is the app's state, `#/<path>?<query>`, so every view can be
// linked to, reloaded and reached with the back button. Routes are patterns such as
// "/c/:collection"; `match` returns the page name and the decoded params, or null.
import { useEffect, useState } from "./html.js";

export function parseHash(hash = location.hash) {
  const text = hash.replace(/^#/, "") || "/";
  const at = text.indexOf("?");
  const path = at < 0 ? text : text.slice(0, at);
  const query = Object.fromEntries(new URLSearchParams(at < 0 ? "" : text.slice(at + 1)));
  return { path: path.startsWith("/") ? path : "/" + path, query };
}

export function match(routes, path) {
  const parts = path.split("/").filter(Boolean);
  for (const [pattern, page] of routes) {
    const want = pattern.split("/").filter(Boolean);
    if (want.length !== parts.length) continue;
    const params = {};
    let ok = true;
    want.forEach((w, i) => {
      if (w.startsWith(":")) {
        try { params[w.slice(1)] = decodeURIComponent(parts[i]); } catch { ok = false; }
      } else if (w !== parts[i]) ok = false;
    });
    if (ok) return { page, params };
  }
  return null;
}

// "#/c/penguins?schema=penguin": `parts` are encoded, empty query values left out.
export function href(path, query = {}) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === "" || value === false) continue;
    params.set(key, typeof value === "object" ? JSON.stringify(value) : String(value));
  }
  const text = params.toString();
  return "#" + path + (text ? "?" + text : "");
}

export const seg = (value) => encodeURIComponent(String(value));

export function navigate(path, query = {}, { replace = false } = {}) {
  const target = href(path, query);
  if (replace) history.replaceState(null, "", target);
  else if (location.hash !== target) location.hash = target;
  if (replace) window.dispatchEvent(new HashChangeEvent("hashchange"));
}

// The current {path, query}, re-rendering on every hash change.
export function useLocation() {
  const [state, setState] = useState(parseHash());
  useEffect(() => {
    const onChange = () => setState(parseHash());
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return state;
}
