/**
 * What a backend of `provider: gemini` or `provider: vertex_ai` is sent, from its settings in
 * `services[].backends[]`: the request URL for a model (urls.ts) and the auth headers.
 *
 * - gemini: `api_key` (a Google AI Studio key) in the `x-goog-api-key` header.
 * - vertex_ai with `project` and `location`: an OAuth2 bearer token (google-access-tokens.ts)
 *   from `credentials_file`, else Application Default Credentials; with `api_key` instead of
 *   OAuth, the key in `x-goog-api-key` (without `project`: Vertex AI express mode).
 *
 * Build one `BackendAuth` per backend (at configuration time), not per request: it holds the
 * token cache.
 */
import type { Clock } from "../../core/clock.ts";
import { GoogleAccessTokens } from "./google-access-tokens.ts";
import { geminiRequestUrl, vertexRequestUrl } from "./urls.ts";

export const GOOGLE_API_KEY_HEADER = "x-goog-api-key";

/** The settings of one backend these providers read. */
export interface GoogleBackendSettings {
  /** Replaces the public address (a private endpoint, a proxy). */
  url?: string;
  api_key?: string;
  /** vertex_ai: the Google Cloud project. */
  project?: string;
  /** vertex_ai: `us-central1`, `europe-west4`, `global`, ... */
  location?: string;
  /** vertex_ai: a service-account key file; absent: Application Default Credentials. */
  credentials_file?: string;
}

export interface BackendAuth {
  /** The headers of one request (a cached token, or a new one when it is about to expire). */
  headers(): Promise<Record<string, string>>;
}

const present = (value: string | undefined): value is string => value !== undefined && value !== "";

export function geminiBackendUrl(settings: GoogleBackendSettings, model: string, stream: boolean): string {
  return geminiRequestUrl({ model, stream, baseUrl: present(settings.url) ? settings.url : undefined });
}

export function vertexBackendUrl(settings: GoogleBackendSettings, model: string, stream: boolean): string {
  return vertexRequestUrl({ model, stream, project: settings.project, location: settings.location, baseUrl: present(settings.url) ? settings.url : undefined });
}

function keyAuth(key: string): BackendAuth {
  const headers = { [GOOGLE_API_KEY_HEADER]: key };
  return { headers: async () => ({ ...headers }) };
}

/** Throws, saying what to set, when the settings cannot authenticate. */
export function geminiBackendAuth(settings: GoogleBackendSettings): BackendAuth {
  if (!present(settings.api_key)) throw new Error('a gemini backend needs api_key: a Google AI Studio API key (e.g. api_key: "${GEMINI_API_KEY}")');
  return keyAuth(settings.api_key);
}

/** Throws, saying what to set, when the settings cannot authenticate. */
export function vertexBackendAuth(settings: GoogleBackendSettings, deps: { clock: Clock; fetch?: typeof fetch }): BackendAuth {
  if (present(settings.api_key)) return keyAuth(settings.api_key);
  if (!present(settings.project) || !present(settings.location)) {
    throw new Error("a vertex_ai backend needs project and location (OAuth from credentials_file or Application Default Credentials), or api_key");
  }
  const tokens = new GoogleAccessTokens({
    keyFile: present(settings.credentials_file) ? settings.credentials_file : undefined,
    projectId: settings.project,
    clock: deps.clock,
    fetch: deps.fetch,
  });
  return { headers: () => tokens.headers() };
}
