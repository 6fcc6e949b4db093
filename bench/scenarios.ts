/** The sync scenarios: what is sent, where, and the exact answer expected. */
import { MODELS, PATHS } from "./config.ts";
import { chatRequest, COMPLETION_JSON, MULTIPART_TYPE, multipartBody, STREAM_TEXT, uploadAnswer } from "./fixtures.ts";
import type { RequestSpec } from "./load/spec.ts";
import type { TargetName } from "./measure.ts";

export type ScenarioId =
  | "sync-json"
  | "sync-stream"
  | "llm-miss"
  | "llm-hit"
  | "stream"
  | "stream-miss"
  | "upload-100k"
  | "submit-100k"
  | "guard-input-2k"
  | "guard-input-2k-typical"
  | "guard-stream-out"
  | "growth";

export interface Scenario {
  id: ScenarioId;
  title: string;
  /** The request to `base`, as sent to (and answered by) that kind of target. */
  request(base: string, target: TargetName): RequestSpec;
  /** Time to first event matters (streams). */
  stream?: boolean;
  /** A guardrail scenario: measured against the same request to a gateway of the same config without its rules (the `unguarded` target). */
  unguarded?: boolean;
}

/** Replaced per request by a unique token: every body, so every cache key, differs. */
export const UNIQUE = "[<id>]";
/** Replaced per request by a model drawn at random from the variant's (bench/matrix.ts `specFor`). */
export const MODEL = "[<model>]";

const json = { "content-type": "application/json" };

/** The chat stream of 22 events; `unique`: every body different (a cache miss each). */
function streamRequest(base: string, unique: boolean): RequestSpec {
  return {
    url: base + PATHS.chat,
    method: "POST",
    headers: json,
    body: Buffer.from(chatRequest(MODELS.chat, unique ? { stream: true, tag: UNIQUE } : { stream: true })),
    ...(unique ? { uniqueMarker: UNIQUE } : {}),
    expect: { status: 200, body: STREAM_TEXT },
  };
}
/**
 * A 2 KB prompt with something for every input rule of the guardrail scenarios to mask: one line
 * of four values repeated (`dense`: 80 values, one every 26 characters), or a support message
 * with one value of each kind in 2 KB of prose (`typical`: what the rules cost on a text before
 * the values they find).
 */
export function guardedPrompt(kind: "typical" | "dense"): string {
  const dense = "Customer ann.lee@example.com called from +1 415 555 0134 about TICKET-20931, card 4111 1111 1111 1111. ";
  const prose = "The customer says the order arrived late and the box was damaged, and asks whether the refund " +
    "can go back to the card used for the order or must be issued as store credit instead. ";
  const facts = "Reach her at ann.lee@example.com or on +1 415 555 0134; the case is TICKET-20931 and she paid with 4111 1111 1111 1111. ";
  let prompt = kind === "dense" ? "" : facts;
  while (prompt.length < 2048) prompt += kind === "dense" ? dense : prose;
  const body = JSON.parse(chatRequest(MODELS.guardIn, { tag: UNIQUE })) as { messages: Array<{ content: string }> };
  body.messages[1].content = `${prompt.slice(0, 2048)} #${UNIQUE}`;
  return JSON.stringify(body);
}

/** An LLM miss with a guarded 2 KB prompt. */
function guardedRequest(base: string, kind: "typical" | "dense"): RequestSpec {
  return {
    url: base + PATHS.chat,
    method: "POST",
    headers: json,
    body: Buffer.from(guardedPrompt(kind)),
    uniqueMarker: UNIQUE,
    expect: { status: 200, body: COMPLETION_JSON },
  };
}

const UPLOAD = multipartBody(MODELS.upload, 100 * 1024);
const UPLOADED = { status: 200, body: uploadAnswer(UPLOAD.length) };

export const SCENARIOS: Record<ScenarioId, Scenario> = {
  "sync-json": {
    id: "sync-json",
    title: "sync direct proxy, JSON",
    request: (base) => ({
      url: base + PATHS.direct,
      method: "POST",
      headers: json,
      body: Buffer.from(chatRequest(MODELS.direct)),
      expect: { status: 200, body: COMPLETION_JSON },
    }),
  },
  // Not in `npm run bench`'s matrix: `cpu-count --scenario sync-stream` (bench/README.md, "Streams").
  "sync-stream": {
    id: "sync-stream",
    title: "sync direct proxy, SSE stream (22 events)",
    stream: true,
    request: (base) => ({
      url: base + PATHS.direct,
      method: "POST",
      headers: json,
      body: Buffer.from(chatRequest(MODELS.direct, { stream: true })),
      expect: { status: 200, body: STREAM_TEXT },
    }),
  },
  "llm-miss": {
    id: "llm-miss",
    title: "LLM proxy, cache miss",
    request: (base) => ({
      url: base + PATHS.chat,
      method: "POST",
      headers: json,
      body: Buffer.from(chatRequest(MODELS.chat, { tag: UNIQUE })),
      uniqueMarker: UNIQUE,
      expect: { status: 200, body: COMPLETION_JSON },
    }),
  },
  "llm-hit": {
    id: "llm-hit",
    title: "LLM proxy, cache hit",
    request: (base) => ({
      url: base + PATHS.chat,
      method: "POST",
      headers: json,
      body: Buffer.from(chatRequest(MODELS.chat)),
      expect: { status: 200, body: COMPLETION_JSON },
    }),
  },
  stream: {
    id: "stream",
    title: "LLM proxy, SSE stream (22 events)",
    stream: true,
    request: (base) => streamRequest(base, false),
  },
  // Every body unique: with llm.cache_streams (cpu-count --cache-streams) each stream is a miss the cache records.
  "stream-miss": {
    id: "stream-miss",
    title: "LLM proxy, SSE stream (22 events), every body unique",
    stream: true,
    request: (base) => streamRequest(base, true),
  },
  // Guardrails (docs/guardrails.md#cost): a masking pii + regex set on a 2 KB prompt (an LLM miss), against the
  // same request to the same gateway without its rules (the `unguarded` target).
  "guard-input-2k": {
    id: "guard-input-2k",
    title: "LLM proxy, 2 KB prompt through pii + regex masks",
    unguarded: true,
    request: (base) => guardedRequest(base, "dense"),
  },
  // The same rules on a prompt of prose with four values: the rules' cost before the values they find.
  "guard-input-2k-typical": {
    id: "guard-input-2k-typical",
    title: "LLM proxy, 2 KB prompt of prose with 4 values through pii + regex masks",
    unguarded: true,
    request: (base) => guardedRequest(base, "typical"),
  },
  // An output mask on the 22-event stream (its events are read and written again), against the same stream without it.
  "guard-stream-out": {
    id: "guard-stream-out",
    title: "LLM proxy, SSE stream (22 events) through an output mask",
    stream: true,
    unguarded: true,
    request: (base, target) => ({
      url: base + PATHS.chat,
      method: "POST",
      headers: json,
      body: Buffer.from(chatRequest(MODELS.guardOut, { stream: true })),
      expect: target === "unguarded" ? { status: 200, body: STREAM_TEXT } : { status: 200, contains: "data: [DONE]" },
    }),
  },
  // The growth scenarios (bench/README.md): an LLM miss whose model and consumer are drawn at random.
  growth: {
    id: "growth",
    title: "LLM proxy, cache miss, random model and consumer",
    request: (base) => ({
      url: base + PATHS.chat,
      method: "POST",
      headers: json,
      body: Buffer.from(chatRequest(MODEL, { tag: UNIQUE })),
      uniqueMarker: UNIQUE,
      expect: { status: 200, body: COMPLETION_JSON },
    }),
  },
  "upload-100k": {
    id: "upload-100k",
    title: "sync direct proxy, 100 KB multipart",
    request: (base) => ({ url: base + PATHS.upload, method: "POST", headers: { "content-type": MULTIPART_TYPE }, body: UPLOAD, expect: UPLOADED }),
  },
  "submit-100k": {
    id: "submit-100k",
    title: "async job submission, 100 KB file",
    // The baseline is the same upload answered by the backend itself.
    request: (base, target) => ({
      url: base + PATHS.jobs,
      method: "POST",
      headers: { "content-type": MULTIPART_TYPE },
      body: UPLOAD,
      expect: target === "gateway" ? { status: 202, contains: '"status":"pending"' } : UPLOADED,
    }),
  },
};
