/**
 * Which requests the audit log records: every state-changing request (job submission and
 * cancellation, purge, reload: any POST, PUT, PATCH or DELETE under /jobs/ and /-/) and
 * every admin read (GET under /-/). Reads of one's own jobs and inference calls are not
 * audited; the request log and metrics cover them.
 */
export type AuditKind = "change" | "admin_read";

const CHANGES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export function auditKind(method: string, path: string): AuditKind | undefined {
  const upper = method.toUpperCase();
  if (path.startsWith("/-/")) return CHANGES.has(upper) ? "change" : "admin_read";
  if (path.startsWith("/jobs/") && CHANGES.has(upper)) return "change";
  return undefined;
}

export type Outcome = "success" | "denied" | "rejected" | "failed";

export function outcomeOf(status: number): Outcome {
  if (status >= 500) return "failed";
  if (status === 401 || status === 403) return "denied";
  if (status >= 400) return "rejected";
  return "success";
}
