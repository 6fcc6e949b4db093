/**
 * Where a Bedrock request goes: the runtime endpoint of a region, and the model's Converse or
 * ConverseStream path. The model id (a foundation model, an inference profile or an ARN) is one
 * path segment, encoded as the AWS SDKs encode it.
 */

/** `us-east-1`, `eu-central-2`, `us-gov-west-1`, `ap-southeast-4`, ... */
const REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/;

export function isBedrockRegion(region: string): boolean {
  return REGION.test(region);
}

/** The public Bedrock runtime endpoint of `region`; throws when the region is not a region name. */
export function bedrockRuntimeUrl(region: string): string {
  if (!isBedrockRegion(region)) {
    throw new Error(`"${region}" is not an AWS region name: set the backend's region to one where Bedrock runs, e.g. "us-east-1"`);
  }
  return `https://bedrock-runtime.${region}.amazonaws.com`;
}

/**
 * `encodeURIComponent` plus the characters it leaves alone that the SDKs still encode in a
 * path label (`!'()*`), so `:` in `anthropic.claude-...-v1:0` becomes `%3A` and `/` in an ARN `%2F`.
 */
export function encodeModelId(modelId: string): string {
  return encodeURIComponent(modelId).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export interface BedrockUrlInput {
  /** The backend's model id (what `model` holds once rewritten for the backend). */
  modelId: string;
  /** ConverseStream when the client asked for a stream, else Converse. */
  stream: boolean;
  /** The backend's region: picks the public endpoint when `baseUrl` is not set. */
  region: string;
  /** An explicit endpoint (a VPC endpoint, a proxy, a test double); its path is kept as a prefix. */
  baseUrl?: string;
}

/** `https://bedrock-runtime.{region}.amazonaws.com/model/{modelId}/converse` (or `/converse-stream`). */
export function bedrockModelUrl(input: BedrockUrlInput): string {
  if (input.modelId === "") throw new Error("a Bedrock request needs a model id: set the backend's model (e.g. anthropic.claude-3-5-haiku-20241022-v1:0)");
  const base = (input.baseUrl !== undefined && input.baseUrl !== "" ? input.baseUrl : bedrockRuntimeUrl(input.region)).replace(/\/+$/, "");
  return `${base}/model/${encodeModelId(input.modelId)}/${input.stream ? "converse-stream" : "converse"}`;
}
