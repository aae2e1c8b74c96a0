// Names from what a person types (issue 37 item 6): a collection's or a view's name is a slug the
// API checks with a pattern; the forms derive it from the words typed, show it, and explain the
// rule in words, never as the pattern.

// `label` as a slug: accents dropped, lower case, every run of other characters one `separator`,
// none at either end, at most 100 characters; "" when nothing is left.
export function slugOf(label, separator = "-") {
  return String(label || "").normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase()
    .replace(/[^a-z0-9]+/g, separator).replace(new RegExp(`^\\${separator}+|\\${separator}+$`, "g"), "").slice(0, 100);
}

export const COLLECTION_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
export const COLLECTION_RULE = "A collection's name uses letters, digits, -, _ and ., and starts with a letter or digit.";
export const VIEW_NAME = /^[a-z][a-z0-9_]{0,99}$/;
export const VIEW_RULE = "A view's name uses lower-case letters, digits and _, and starts with a letter.";

// A view's name from its label: a slug with `_`, starting with a letter.
export function viewNameOf(label) {
  const slug = slugOf(label, "_");
  return slug && /^[a-z]/.test(slug) ? slug : slug ? `view_${slug}`.slice(0, 100) : "";
}

// The API's refusal of a name said in words: its pattern message replaced by `rule`.
export function nameError(message, rule) {
  return message && /pattern|\^\[|does not match/.test(message) ? rule : message;
}
