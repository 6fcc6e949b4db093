/**
 * Who a Bedrock request is sent as: a Bedrock API key (a bearer token), explicit AWS keys, or
 * the standard AWS credential chain: environment variables, SSO and web identity, the shared
 * `~/.aws` files and `credential_process`, then container and instance metadata. The chain is
 * the AWS SDK's own; it is loaded on first use (a gateway without Bedrock never loads it) and
 * caches what it found until shortly before it expires.
 */

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Present for temporary credentials (roles, SSO, metadata); sent as `x-amz-security-token`. */
  sessionToken?: string;
  expiration?: Date;
}

export type AwsCredentialSource = () => Promise<AwsCredentials>;

export type BedrockAuth =
  /** `Authorization: Bearer <key>`: a Bedrock API key, no signing. */
  | { kind: "api_key"; apiKey: string }
  /** AWS Signature Version 4 with these credentials. */
  | { kind: "sigv4"; credentials: AwsCredentialSource };

const NO_CREDENTIALS = "no AWS credentials were found for Bedrock: set the backend's api_key, or give the gateway AWS credentials " +
  "(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE with ~/.aws files, or a container or instance role)";

/** A fresh chain (tests use one per case; the gateway shares `sharedCredentialChain`). */
export function createCredentialChain(): AwsCredentialSource {
  let provider: Promise<() => Promise<AwsCredentials>> | undefined;
  return async () => {
    provider ??= import("@aws-sdk/credential-provider-node").then(({ defaultProvider }) => defaultProvider());
    try {
      return await (await provider)();
    } catch (error) {
      throw new Error(`${NO_CREDENTIALS} (${error instanceof Error ? error.message : String(error)})`, { cause: error });
    }
  };
}

let shared: AwsCredentialSource | undefined;

/** One chain for the whole gateway, so credentials are looked up once and refreshed before they expire. */
export function sharedCredentialChain(): AwsCredentialSource {
  shared ??= createCredentialChain();
  return shared;
}

export interface BedrockAuthSettings {
  /** The backend's `api_key` (a Bedrock API key). */
  apiKey?: string;
  /** Explicit keys, when the backend names them; else the chain. */
  credentials?: AwsCredentials;
}

/** The API key when one is set, else explicit keys, else the shared AWS chain. */
export function bedrockAuth(settings: BedrockAuthSettings, chain: AwsCredentialSource = sharedCredentialChain()): BedrockAuth {
  if (settings.apiKey !== undefined && settings.apiKey !== "") return { kind: "api_key", apiKey: settings.apiKey };
  const explicit = settings.credentials;
  if (explicit) {
    if (explicit.accessKeyId === "" || explicit.secretAccessKey === "") {
      throw new Error("Bedrock credentials need both an access key id and a secret access key");
    }
    return { kind: "sigv4", credentials: () => Promise.resolve(explicit) };
  }
  return { kind: "sigv4", credentials: chain };
}
