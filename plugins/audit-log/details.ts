/**
 * What a successful change did, read from its small JSON answer: the job id of a
 * submission, the status after a cancellation, the count of a purge, the services of a
 * reload, the id of an API key, the entries a dead-letter discard or redelivery acted on. Only
 * these keys are kept, so a job's result (or a key's secret) never lands in the audit log.
 */
/** Answer key -> audit line key (`status` would clash with the HTTP status). */
const KEPT: Record<string, string> = {
  job_id: "job_id",
  id: "key_id",
  status: "job_status",
  model: "model",
  deleted: "deleted",
  services: "services",
  discarded: "discarded",
  redelivered: "redelivered",
};
const MAX_BYTES = 16 * 1024;

/**
 * A copy of the answer to read later, taken now, before the server starts sending the
 * original; none for anything but a small successful JSON answer.
 */
export function copyForDetails(response: Response): Response | undefined {
  if (response.status >= 300 || !response.body) return undefined;
  if (!(response.headers.get("content-type") ?? "").includes("json")) return undefined;
  // Answers built from a string carry no length; those of the audited endpoints are small.
  const length = response.headers.get("content-length");
  if (length !== null && Number(length) > MAX_BYTES) return undefined;
  return response.clone();
}

export async function detailsOf(copy: Response | undefined): Promise<Record<string, unknown>> {
  if (!copy) return {};
  try {
    const text = await copy.text();
    if (text.length > MAX_BYTES) return {};
    const body = JSON.parse(text) as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [key, name] of Object.entries(KEPT)) if (body[key] !== undefined && typeof body[key] !== "object") out[name] = body[key];
    return out;
  } catch {
    return {};
  }
}
