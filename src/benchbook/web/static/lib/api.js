// The HTTP API under /api, and its error envelope (OpenAPI `ErrorResponse`, `ValidationErrorResponse`): every failure is an ApiError
// whose `message` is the server's `detail` (or a readable summary of a 422's entries) and whose
// `fieldErrors()` maps a field to its message, for showing next to the control that caused it.

export class ApiError extends Error {
  constructor(status, body, fallback) {
    const detail = body && body.detail;
    const errors = Array.isArray(body && body.errors) ? body.errors
      : Array.isArray(detail) ? detail : [];
    const text = typeof detail === "string" && detail !== "Request validation failed" ? detail
      : errors.length ? errors.map(describe).join("; ") : (typeof detail === "string" ? detail : fallback);
    super(text || fallback || `HTTP ${status}`);
    this.status = status;
    this.body = body;
    this.errors = errors;
  }

  // {fieldName: message} from the 422 entries' `loc`: the last string part that is not a
  // location keyword ("body", "query", "data", "path") names the field.
  fieldErrors() {
    const out = {};
    for (const entry of this.errors) {
      const loc = (entry.loc || []).filter((p) => typeof p === "string" && !["body", "query", "path", "data"].includes(p));
      const key = loc.length ? loc[loc.length - 1] : "";
      if (!(key in out)) out[key] = entry.msg || String(entry);
    }
    return out;
  }
}

function describe(entry) {
  if (typeof entry !== "object" || entry === null) return String(entry);
  const loc = (entry.loc || []).filter((p) => p !== "body" && p !== "query").join(".");
  return loc ? `${loc}: ${entry.msg}` : entry.msg;
}

function url(path, query) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query || {})) {
    if (value === undefined || value === null || value === "") continue;
    if (Array.isArray(value)) value.forEach((v) => params.append(key, v));
    else params.set(key, typeof value === "object" ? JSON.stringify(value) : String(value));
  }
  const text = params.toString();
  return "/api" + path + (text ? "?" + text : "");
}

// One request. `body` is sent as JSON, `form` (a FormData) as multipart. Resolves to the parsed
// JSON (or the Response itself with `raw: true`); rejects with ApiError, status 0 when the server
// cannot be reached.
export async function api(path, { method = "GET", query, body, form, raw = false, signal } = {}) {
  const init = { method, headers: { accept: "application/json" }, signal };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  } else if (form !== undefined) {
    init.body = form;
  }
  let response;
  try {
    response = await fetch(url(path, query), init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, null, "The server cannot be reached: is `benchbook serve` still running?");
  }
  if (response.ok && raw) return response;
  let parsed = null;
  const text = await response.text();
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
  if (!response.ok) throw new ApiError(response.status, parsed, `${response.status} ${response.statusText}`);
  return parsed;
}

export const get = (path, query, options = {}) => api(path, { ...options, query });
export const post = (path, body, options = {}) => api(path, { ...options, method: "POST", body });
export const patch = (path, body, options = {}) => api(path, { ...options, method: "PATCH", body });
export const put = (path, body, options = {}) => api(path, { ...options, method: "PUT", body });
export const del = (path, query, options = {}) => api(path, { ...options, method: "DELETE", query });
export const apiUrl = url;
export const enc = encodeURIComponent;
