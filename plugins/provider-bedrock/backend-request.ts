/**
 * Everything a Bedrock attempt needs besides its body: the URL of the model's Converse or
 * ConverseStream endpoint and the headers that authenticate it (a bearer API key, or a SigV4
 * signature over the exact body that will be sent). The one call the LLM proxy makes per
 * attempt, after translating the body and before sending it.
 */
import { type AwsCredentials, type AwsCredentialSource, bedrockAuth } from "./credentials.ts";
import { signBedrockRequest } from "./sigv4.ts";
import { bedrockModelUrl } from "./urls.ts";

/** What a backend entry says about reaching Bedrock. */
export interface BedrockBackendSettings {
  /** `backends[].region`: the endpoint (unless `url`) and the signature's scope. */
  region: string;
  /** `backends[].url`: an explicit endpoint (VPC endpoint, proxy); default the region's public one. */
  url?: string;
  /** `backends[].api_key`: a Bedrock API key; without it requests are signed with AWS credentials. */
  apiKey?: string;
  /** Explicit AWS keys; without them (and without `apiKey`) the standard AWS chain. */
  credentials?: AwsCredentials;
}

export interface BedrockAttempt {
  settings: BedrockBackendSettings;
  /** The model id the body was translated for (`model` after the backend rewrite). */
  modelId: string;
  stream: boolean;
  /** The translated Converse body, as it will be sent. */
  body: Uint8Array;
  /** Headers the gateway sends anyway (`content-type`, forwarded ones): signed with the rest. */
  headers: Readonly<Record<string, string>>;
  /** Credentials for signing when the settings name none (default: the shared AWS chain). */
  chain?: AwsCredentialSource;
  now?: Date;
}

/** The URL and the complete headers to send the attempt with. */
export async function prepareBedrockRequest(attempt: BedrockAttempt): Promise<{ url: string; headers: Record<string, string> }> {
  const { settings } = attempt;
  const url = bedrockModelUrl({ modelId: attempt.modelId, stream: attempt.stream, region: settings.region, baseUrl: settings.url });
  const headers: Record<string, string> = { "content-type": "application/json", ...lowerCased(attempt.headers) };
  const auth = bedrockAuth(settings, attempt.chain);
  if (auth.kind === "api_key") return { url, headers: { ...headers, authorization: `Bearer ${auth.apiKey}` } };
  const signed = await signBedrockRequest({
    method: "POST",
    url,
    headers,
    body: attempt.body,
    region: settings.region,
    credentials: auth.credentials,
    now: attempt.now,
  });
  return { url, headers: signed };
}

function lowerCased(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
  return out;
}
