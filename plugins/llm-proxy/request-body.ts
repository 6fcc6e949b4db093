/**
 * What goes to one backend (step 3 of the processing order in handler.ts): the model rewritten
 * for the target, `stream_options.include_usage` injected on streams when missing, then the
 * provider's request translation. A body nothing changed is sent as the client's exact bytes.
 * A translation that throws becomes an `UntranslatableRequest`: the client gets 400.
 */
import { UntranslatableRequest } from "../../core/llm/client-protocol.ts";
import { asBytes, type Bytes } from "../../core/llm/json.ts";
import { isRecord, type JsonObject, type Translator } from "../../core/llm/provider.ts";
import type { BackendTarget } from "../../core/proxy/backends.ts";
import { utf8 } from "../../core/llm/utf8-blocks.ts";

/**
 * The chat-completions body for `target`. `model` becomes `backends[].model`, else
 * `backend_model`; a body without `model` (the default model was used) gets the alias, since
 * an LLM backend needs one.
 */
export function chatBodyFor(body: JsonObject, target: BackendTarget, alias: string, stream: boolean): { value: JsonObject; changed: boolean } {
  let value = body;
  const model = target.model !== "" ? target.model : body.model === undefined && alias !== "" ? alias : undefined;
  if (model !== undefined && body.model !== model) value = { ...value, model };
  if (stream) {
    const options = isRecord(body.stream_options) ? body.stream_options : {};
    if (options.include_usage === undefined) value = { ...value, stream_options: { ...options, include_usage: true } };
  }
  return { value, changed: value !== body };
}

/** The model a backend is sent (what `chatBodyFor` writes): the backend's, else the client's, else the alias. */
export function sentModel(body: JsonObject, target: BackendTarget, alias: string): string {
  if (target.model !== "") return target.model;
  return typeof body.model === "string" ? body.model : alias;
}

export function backendBody(
  original: { value: JsonObject; bytes: Uint8Array },
  target: BackendTarget,
  alias: string,
  stream: boolean,
  translator: Translator,
): Bytes {
  const chat = chatBodyFor(original.value, target, alias, stream);
  if (!translator.translateRequest) return chat.changed ? utf8(JSON.stringify(chat.value)) : asBytes(original.bytes);
  let translated: JsonObject;
  try {
    translated = translator.translateRequest(chat.value);
  } catch (error) {
    throw new UntranslatableRequest(error instanceof Error ? error.message : String(error));
  }
  return utf8(JSON.stringify(translated));
}
