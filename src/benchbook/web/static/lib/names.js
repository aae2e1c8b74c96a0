// Names from what a person types (issue 37 item 6): a collection's or a view's name is a slug the
// API checks with a pattern; the forms derive it from the words typed, show it, and explain the
// rule in words, never as the pattern.

// Letters that no Unicode decomposition turns into ASCII, spelled as their languages write them.
const SPELLED = { "œ": "oe", "æ": "ae", "ß": "ss", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i" };

// `label` as a slug: accents dropped (and œ, æ, ß… spelled out), lower case, every run of other
// characters one `separator`, none at either end, at most 100 characters; "" when nothing is left.
export function slugOf(label, separator = "-") {
  return String(label || "").toLowerCase().replace(/[œæßøłđðþı]/g, (c) => SPELLED[c]).normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/[^a-z0-9]+/g, separator).replace(new RegExp(`^\\${separator}+|\\${separator}+$`, "g"), "").slice(0, 100);
}

export const COLLECTION_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
export const COLLECTION_RULE = "A collection's name uses letters, digits, -, _ and ., and starts with a letter or digit.";
export const VIEW_NAME = /^[a-z][a-z0-9_]{0,99}$/;
export const VIEW_RULE = "A view's name uses lower-case letters, digits and _, and starts with a letter.";

export const SCHEMA_NAME = /^[a-z][a-z0-9_]{0,62}$/;  // a field's name follows the same rule
export const SCHEMA_RULE = "A schema's name uses lower-case letters, digits and _, and starts with a letter.";
export const FIELD_RULE = "A field's name uses lower-case letters, digits and _, starts with a letter, and is unique in its schema.";

// A name from words: a slug with `_`, at most `max` characters, starting with a letter (`prefix_`
// put before one that starts with a digit); "" when nothing is left.
export function identifierOf(label, prefix, max = 100) {
  const slug = slugOf(label, "_");
  return (slug && /^[a-z]/.test(slug) ? slug : slug ? `${prefix}_${slug}` : "").slice(0, max).replace(/_+$/, "");
}

// A view's name from its label: a slug with `_`, starting with a letter.
export const viewNameOf = (label) => identifierOf(label, "view", 100);

// What a form sends for the words typed where a schema's or a field's name goes: the words as they
// are when they already make a name, else the name made of them (`prefix` as in identifierOf) with
// the words as the label when the form's label is empty. {name, label, derived}.
export function nameFromWords(typed, label, prefix) {
  const words = String(typed || "").trim();
  if (!words || SCHEMA_NAME.test(words)) return { name: words, label, derived: false };
  const name = identifierOf(words, prefix, 63);
  return { name: name || words, label: label || words, derived: Boolean(name) };
}

// The API's refusal of a name said in words: its pattern message replaced by `rule`.
export function nameError(message, rule) {
  return message && /pattern|\^\[|does not match/.test(message) ? rule : message;
}
