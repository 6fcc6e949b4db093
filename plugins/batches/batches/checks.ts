/**
 * The checks every line of a batch passes before anything is sent: its shape, a `custom_id`
 * unique in the batch, the batch's endpoint, and a model its owner may use there (hidden models
 * read as unknown, as for a direct request). A line that passes becomes a checked line: its
 * custom_id, the model queue it runs on, and the body to send.
 */
import { isRecord } from "../../../core/llm/json.ts";
import type { BatchApi, LineError } from "./record.ts";

/** The longest custom_id kept (it is held for the duplicate check while the file is read). */
export const CUSTOM_ID_MAX = 512;

export interface CheckedLine {
  custom_id: string;
  /** The model alias whose queue the line waits in. */
  model: string;
  body: Record<string, unknown>;
}

export interface LineRules {
  api: BatchApi;
  /** The path every line is sent to (the batch's endpoint; `/v1/messages` for Message Batches). */
  endpoint: string;
  /** The alias of the model `name` at the endpoint when the owner may use it; undefined otherwise. */
  modelFor(name: string): string | undefined;
}

type Checked = { line: CheckedLine } | { error: Omit<LineError, "line"> };

const problem = (code: string, message: string): Checked => ({ error: { code, message } });

/** What is sent of a line's body: never a stream (a batch line's answer is read whole). */
function sentBody(body: Record<string, unknown>): Record<string, unknown> {
  if (!("stream" in body) && !("stream_options" in body)) return body;
  const { stream: _stream, stream_options: _options, ...rest } = body;
  return rest;
}

/** Checks one parsed line; `seen` holds the custom_ids of the lines before it. */
export function checkLine(value: unknown, rules: LineRules, seen: Set<string>): Checked {
  if (!isRecord(value)) return problem("invalid_json_line", "the line is not a JSON object; write one request object per line");
  const customId = value.custom_id;
  if (typeof customId !== "string" || customId === "") {
    return problem("missing_custom_id", 'the line has no "custom_id"; give every request a custom_id (a non-empty string) to find its answer by');
  }
  if (customId.length > CUSTOM_ID_MAX) return problem("invalid_custom_id", `"custom_id" is ${customId.length} characters long; keep it to ${CUSTOM_ID_MAX}`);
  if (seen.has(customId)) {
    return problem("duplicate_custom_id", `custom_id "${customId}" is used by an earlier line; every custom_id in a batch must be unique`);
  }
  let body: unknown;
  if (rules.api === "openai") {
    if (value.method !== "POST") return problem("invalid_method", `"method" must be "POST" (got ${JSON.stringify(value.method ?? null)})`);
    if (value.url !== rules.endpoint) {
      return problem(
        "invalid_url",
        `"url" ${
          JSON.stringify(value.url ?? null)
        } is not the batch's endpoint "${rules.endpoint}"; every line must use the endpoint the batch was created with`,
      );
    }
    body = value.body;
    if (!isRecord(body)) return problem("invalid_body", 'the line has no "body" object; put the request\'s JSON body there');
  } else {
    body = value.params;
    if (!isRecord(body)) return problem("invalid_body", 'the request has no "params" object; put the Messages request there');
  }
  const name = body.model;
  if (typeof name !== "string" || name === "") {
    return problem("missing_model", `"${rules.api === "openai" ? "body" : "params"}.model" is missing; name the model each request is for`);
  }
  const model = rules.modelFor(name);
  if (model === undefined) {
    return problem(
      "model_not_found",
      `model "${name}" does not exist or is not available to you at ${rules.endpoint}; list the models you may use with GET /v1/models`,
    );
  }
  return { line: { custom_id: customId, model, body: sentBody(body) } };
}
