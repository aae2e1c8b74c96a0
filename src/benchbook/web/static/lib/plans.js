// Restore plans written as sentences (Recently deleted, the record page): a record's or a
// collection's RestorePlanResponse, or restore-all's counts, never raw JSON or field names.
import { html } from "./html.js";
import { counted } from "./counting.js";

// The sentences of one plan, as a list of strings.
export function planSentences(plan) {
  if (!plan) return [];
  const out = [];
  if ("can_restore" in plan) {  // one record, collection, schema or field
    const what = plan.kind === "record" ? `the record ${plan.name || ""}`.trim() : `the ${plan.kind === "dataset" ? "collection" : plan.kind} ${plan.name || ""}`.trim();
    if (plan.can_restore) {
      out.push(`Restoring brings back ${what}${plan.collection ? ` into the collection ${plan.collection}` : ""}${plan.schema_name ? ` of the schema ${plan.schema_name}` : ""}.`);
      if (plan.kind === "record" ? plan.records > 1 : plan.records > 0) out.push(`${counted(plan.records, "record")} come${plan.records === 1 ? "s" : ""} back with it.`);
      if (plan.cleared_references) out.push(`${counted(plan.cleared_references, "reference")} to it that were cleared stay cleared.`);
    } else {
      out.push(`${what[0].toUpperCase() + what.slice(1)} cannot be restored${plan.blocked ? `: ${plan.blocked}` : ""}.`);
      if (plan.blocked_by) out.push(`Restore the ${plan.blocked_by.kind} ${plan.blocked_by.name || plan.blocked_by.id} first.`);
    }
    if (plan.conflict) out.push("Another record took its unique values meanwhile.");
    return out;
  }
  // restore-all counts
  const parts = [];
  if (plan.collections) parts.push(counted(plan.collections, "collection"));
  if (plan.schemas) parts.push(counted(plan.schemas, "schema"));
  if (plan.fields) parts.push(counted(plan.fields, "field"));
  if (plan.records) parts.push(counted(plan.records, "record"));
  out.push(parts.length ? `Restoring brings back ${parts.join(", ")}.` : "Nothing here is still deleted: it has been restored or purged.");
  if (plan.restores && plan.restores !== plan.records) out.push(`Afterwards ${counted(plan.restores, "record")} are live again.`);
  if (plan.blocked) out.push(`${counted(plan.blocked, "record")} stay${plan.blocked === 1 ? "s" : ""} deleted: ${plan.blocked === 1 ? "it is" : "they are"} under something deleted that is not restored with ${plan.blocked === 1 ? "it" : "them"}.`);
  if (plan.truncated) out.push("More matched than were looked at.");
  return out;
}

export function PlanText({ plan }) {
  const lines = planSentences(plan);
  return lines.length ? html`<div class="plan-box" role="status">${lines.map((s) => html`<p>${s}</p>`)}</div>` : null;
}
