/**
 * A backend with credentials of its own (`backends[].api_key`, an OAuth token, a SigV4
 * signature) is sent those and no other: the credential headers a client sent (its gateway key
 * in `Authorization` or `x-api-key`, as the `openai` and `@anthropic-ai/sdk` clients always
 * do) would reach a third party, and some providers refuse a request that carries one next to
 * their own (Google reads any `Authorization` as the caller's OAuth token). Without credentials
 * of its own, a backend gets the headers as they are forwarded (docs/providers.md#credentials).
 */

/** The headers that carry a credential, in the providers' wordings (lower case). */
export const CREDENTIAL_HEADERS: readonly string[] = ["authorization", "x-api-key", "api-key", "x-goog-api-key"];

/** `headers` without any credential header, then `credentials`. */
export function withCredentials(headers: Readonly<Record<string, string>>, credentials: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers) if (!CREDENTIAL_HEADERS.includes(name)) out[name] = headers[name];
  return Object.assign(out, credentials);
}
