/**
 * `provider: azure_openai`: the Chat Completions API as Azure OpenAI serves it, per deployment.
 * A backend sets `resource` (the address is `https://{resource}.openai.azure.com`) or `url`,
 * `deployment`, and `api_version` (default below). The client's path `/v1/<operation>` goes to
 * `{address}/openai/deployments/{deployment}/<operation>?api-version={api_version}`. The key,
 * `api_key`, goes in the `api-key` header; with Microsoft Entra ID, leave `api_key` out and set
 * the token as a header (`headers: {authorization: "Bearer ${AZURE_OPENAI_TOKEN}"}`).
 */
import { type BackendCall, type BackendSettings, type OutgoingRequest, type ProviderDefinition, withCredentials } from "../../core/llm/provider.ts";
import { watchingTranslator } from "./hosts.ts";

/** The generally available API version the gateway was tested against. */
export const AZURE_DEFAULT_API_VERSION = "2024-10-21";

/** A resource or deployment name: it becomes part of a host name or a path. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function azureResourceUrl(resource: string): string {
  return `https://${resource}.openai.azure.com`;
}

/** `{address}/openai/deployments/{deployment}/chat/completions?api-version=...` (the client's query kept). */
export function azureRequestUrl(call: BackendCall): string {
  const { backend } = call;
  const base = (backend.url !== "" ? backend.url : azureResourceUrl(backend.resource)).replace(/\/+$/, "");
  const [path, query = ""] = call.path.split("?", 2);
  const operation = path.replace(/^\/v1(?=\/)/, "");
  const params = new URLSearchParams(query);
  params.set("api-version", backend.api_version || AZURE_DEFAULT_API_VERSION);
  return `${base}/openai/deployments/${encodeURIComponent(backend.deployment)}${operation}?${params}`;
}

function backendProblems(backend: BackendSettings): string[] {
  const problems: string[] = [];
  if (backend.url === "" && backend.resource === "") problems.push("resource: required (or url): the Azure OpenAI resource name");
  if (backend.resource !== "" && !NAME.test(backend.resource)) problems.push(`resource: "${backend.resource}" is not a resource name`);
  if (backend.deployment === "") problems.push("deployment: required: the name of the model deployment");
  else if (!NAME.test(backend.deployment)) problems.push(`deployment: "${backend.deployment}" is not a deployment name`);
  return problems;
}

export const azureOpenAiProvider: ProviderDefinition = {
  name: "azure_openai",
  defaultUrl: "",
  createTranslator: watchingTranslator,
  requestUrl: azureRequestUrl,
  authorize: (request: OutgoingRequest, call: BackendCall) =>
    call.backend.api_key === "" ? { ...request.headers } : withCredentials(request.headers, { "api-key": call.backend.api_key }),
  backendProblems,
  backendAddress: (backend) => (backend.resource !== "" ? azureResourceUrl(backend.resource) : ""),
};
