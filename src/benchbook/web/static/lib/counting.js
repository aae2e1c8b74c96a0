// Counting things in words, the one way every page writes "1 record", "1,000 records" or
// "2 boxes" (no Preact: Node's test runner checks it, tests/js/). lib/ui.js re-exports
// formatCount, so pages that import it from there keep working.

// A count as the reader's locale writes it ("1,000"); "" for none.
export function formatCount(n) {
  return n === null || n === undefined ? "" : Number(n).toLocaleString();
}

// The plural of an English noun (or of a phrase's last word): box → boxes, match → matches,
// study → studies, day → days, record → records.
export const pluralOf = (one) =>
  (/(s|x|z|ch|sh)$/.test(one) ? one + "es" : /[^aeiou]y$/.test(one) ? one.slice(0, -1) + "ies" : one + "s");

// The noun alone for a count written apart from it ("<span>1,000</span> records"): `one` for 1,
// else `many` (the noun's plural unless given).
export const nounFor = (n, one, many = pluralOf(one)) => (n === 1 ? one : many);

// "1 record", "1,000 records", "2 boxes"; `many` where the plural is not the noun's rule's.
export const counted = (n, one, many = pluralOf(one)) => `${formatCount(n)} ${nounFor(n, one, many)}`;

// "a, b and c"; "a" for one, "" for none.
export const andList = (xs) => (xs.length > 1 ? `${xs.slice(0, -1).join(", ")} and ${xs[xs.length - 1]}` : xs[0] || "");
