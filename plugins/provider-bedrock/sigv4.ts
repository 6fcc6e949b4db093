/**
 * AWS Signature Version 4 for a Bedrock runtime request, by the AWS SDK's own signer: the
 * headers to send, `authorization` and `x-amz-*` added. What is signed is exactly what is
 * given (method, URL, headers, body bytes), so the request must go out with these bytes and
 * these headers unchanged; headers added after signing are simply not covered.
 */
import { Hash } from "@smithy/hash-node";
import { SignatureV4 } from "@smithy/signature-v4";
import type { AwsCredentials, AwsCredentialSource } from "./credentials.ts";

/** The signing name of the Bedrock runtime (its endpoints are `bedrock-runtime.*`, its scope `bedrock`). */
export const BEDROCK_SIGNING_SERVICE = "bedrock";

const sha256 = Hash.bind(null, "sha256");

export interface SignableRequest {
  method: string;
  url: string;
  /** The headers that will be sent (names in any case); `host` is taken from the URL. */
  headers: Readonly<Record<string, string>>;
  body: Uint8Array | string;
  /** The region in the credential scope (the backend's region, whatever the URL's host is). */
  region: string;
  credentials: AwsCredentials | AwsCredentialSource;
  /** The signing time (default: now); AWS refuses signatures more than 5 minutes off. */
  now?: Date;
}

/** `headers` plus `x-amz-date`, `x-amz-content-sha256`, `x-amz-security-token` (temporary credentials) and `authorization`, all lower case. */
export async function signBedrockRequest(request: SignableRequest): Promise<Record<string, string>> {
  const url = new URL(request.url);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value;
  headers.host = url.host;
  const signer = new SignatureV4({ service: BEDROCK_SIGNING_SERVICE, region: request.region, credentials: request.credentials, sha256 });
  const query: Record<string, string> = {};
  for (const [name, value] of url.searchParams) query[name] = value;
  const signed = await signer.sign(
    {
      method: request.method.toUpperCase(),
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port !== "" ? { port: Number(url.port) } : {}),
      // As sent: the model id stays percent-encoded here; the signer encodes the path once more, as AWS expects.
      path: url.pathname,
      query,
      headers,
      body: request.body,
    },
    request.now ? { signingDate: request.now } : {},
  );
  const out: Record<string, string> = {};
  // `host` is the URL's: the HTTP client sets it.
  for (const [name, value] of Object.entries(signed.headers)) if (name !== "host") out[name] = value;
  return out;
}
