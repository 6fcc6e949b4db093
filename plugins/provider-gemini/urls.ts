/**
 * The request URLs of Google's generative APIs. The model and the streaming choice are in the
 * URL, not the body, so a URL is built per backend model and per request.
 *
 * - Google AI Studio (the Gemini API): `{base}/v1beta/models/{model}:generateContent`, or
 *   `:streamGenerateContent?alt=sse` (server-sent events; without `alt=sse` it streams one
 *   JSON array). `base` is `https://generativelanguage.googleapis.com`.
 * - Vertex AI: `{base}/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{method}`,
 *   `base` being `https://{location}-aiplatform.googleapis.com`, `https://aiplatform.googleapis.com`
 *   for `global` and `https://aiplatform.{us|eu}.rep.googleapis.com` for the multi-regions (as
 *   Google's own SDK builds them). Google's models (`publishers/google`) take `generateContent`
 *   / `streamGenerateContent?alt=sse`; Anthropic's (`publishers/anthropic`) take the Messages
 *   API at `rawPredict` / `streamRawPredict`. Without a project (Vertex AI express mode, an API
 *   key) Google's models are at `https://aiplatform.googleapis.com/v1/publishers/google/models/{model}`.
 *
 * A backend's own `url` replaces `base` (a private endpoint, a proxy, a test's fake).
 */

export const GEMINI_API_URL = "https://generativelanguage.googleapis.com";
export const VERTEX_GLOBAL_URL = "https://aiplatform.googleapis.com";

/** The publishers whose protocol the vertex_ai provider speaks (Gemini's, and Anthropic's Messages). */
export const VERTEX_PUBLISHERS = new Set(["google", "anthropic"]);

/** Locations served from `aiplatform.{location}.rep.googleapis.com`. */
const MULTI_REGIONS = new Set(["us", "eu"]);

/** A path segment or a model path: nothing that could leave it (no `..`, `?`, `#`, `%`, spaces). */
const SAFE_PATH = /^[A-Za-z0-9._@-]+(\/[A-Za-z0-9._@-]+)*$/;

function checked(value: string, what: string): string {
  if (value === "" || value.includes("..") || !SAFE_PATH.test(value)) {
    throw new Error(`${what} ${JSON.stringify(value)} cannot go into a Google API URL: use letters, digits and . _ - @ (and / between parts)`);
  }
  return value;
}

function checkedSegment(value: string, what: string): string {
  if (checked(value, what).includes("/")) throw new Error(`${what} ${JSON.stringify(value)} cannot contain "/"`);
  return value;
}

const trimSlash = (url: string) => url.replace(/\/+$/, "");

const geminiMethod = (stream: boolean) => (stream ? "streamGenerateContent?alt=sse" : "generateContent");
const anthropicMethod = (stream: boolean) => (stream ? "streamRawPredict" : "rawPredict");

export interface GeminiUrlOptions {
  /** `gemini-2.5-flash`, or a full `models/...` / `tunedModels/...` name. */
  model: string;
  stream: boolean;
  /** Replaces `https://generativelanguage.googleapis.com`. */
  baseUrl?: string;
}

/** A Google AI Studio (Gemini API) request URL. */
export function geminiRequestUrl(options: GeminiUrlOptions): string {
  const model = checked(options.model, "model");
  const resource = model.startsWith("models/") || model.startsWith("tunedModels/") ? model : `models/${checkedSegment(model, "model")}`;
  return `${trimSlash(options.baseUrl ?? GEMINI_API_URL)}/v1beta/${resource}:${geminiMethod(options.stream)}`;
}

/** A Vertex AI model name, parsed: who publishes it and its own name (or the full resource it already is). */
interface VertexModel {
  publisher: string;
  name: string;
  /** Set when the model was given as a full `projects/...` resource. */
  resource?: string;
}

function vertexModelOf(model: string): VertexModel {
  const parts = checked(model, "model").split("/");
  if (parts[0] === "projects") {
    return { publisher: /\/publishers\/([^/]+)\/models\//.exec(model)?.[1] ?? "google", name: parts[parts.length - 1], resource: model };
  }
  if (parts.length === 4 && parts[0] === "publishers" && parts[2] === "models") return { publisher: parts[1], name: parts[3] };
  if (parts.length === 2) return parts[0] === "models" ? { publisher: "google", name: parts[1] } : { publisher: parts[0], name: parts[1] };
  if (parts.length === 1) return { publisher: /^claude-/i.test(model) ? "anthropic" : "google", name: model };
  throw new Error(
    `model "${model}" is not a Vertex AI model name: use "name", "publisher/name", "publishers/{publisher}/models/{name}" or a full "projects/..." resource`,
  );
}

/**
 * Which publisher serves a Vertex AI model: `anthropic/claude-...` and `publishers/anthropic/models/...`
 * name theirs; a bare `claude-...` is Anthropic's; anything else is Google's.
 */
export function vertexPublisherOf(model: string): string {
  return vertexModelOf(model).publisher;
}

/** The default Vertex AI address of a location. */
export function vertexBaseUrl(location: string): string {
  const at = checkedSegment(location, "location");
  if (at === "global") return VERTEX_GLOBAL_URL;
  if (MULTI_REGIONS.has(at)) return `https://aiplatform.${at}.rep.googleapis.com`;
  return `https://${at}-aiplatform.googleapis.com`;
}

export interface VertexUrlOptions {
  /** `gemini-2.5-pro`, `claude-sonnet-4@20250514`, `anthropic/...`, `publishers/.../models/...`, or a full `projects/...` resource. */
  model: string;
  stream: boolean;
  /** Absent: express mode (an API key, Google's models only). */
  project?: string;
  /** Required with a project (`us-central1`, `europe-west4`, `global`, `us`, `eu`, ...). */
  location?: string;
  /** Replaces the location's address. */
  baseUrl?: string;
}

/** A Vertex AI request URL (Google's models or Anthropic's, see the top). */
export function vertexRequestUrl(options: VertexUrlOptions): string {
  const model = vertexModelOf(options.model);
  if (!VERTEX_PUBLISHERS.has(model.publisher)) {
    throw new Error(`model "${options.model}" is published by "${model.publisher}": the vertex_ai provider speaks to Google's models and Anthropic's only`);
  }
  const method = model.publisher === "anthropic" ? anthropicMethod(options.stream) : geminiMethod(options.stream);
  if (options.project === undefined || options.project === "") {
    if (model.publisher !== "google" || model.resource !== undefined) {
      throw new Error(`model "${options.model}" needs a project and a location on Vertex AI (express mode serves Google's models only)`);
    }
    return `${trimSlash(options.baseUrl ?? VERTEX_GLOBAL_URL)}/v1/publishers/google/models/${model.name}:${method}`;
  }
  if (options.location === undefined || options.location === "") {
    throw new Error(`Vertex AI needs a location (e.g. us-central1 or global) with project "${options.project}"`);
  }
  const project = checkedSegment(options.project, "project");
  const location = checkedSegment(options.location, "location");
  const base = trimSlash(options.baseUrl ?? vertexBaseUrl(location));
  const resource = model.resource ?? `projects/${project}/locations/${location}/publishers/${model.publisher}/models/${model.name}`;
  return `${base}/v1/${resource}:${method}`;
}
