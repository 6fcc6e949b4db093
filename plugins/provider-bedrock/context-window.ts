/**
 * Whether a Bedrock error says the prompt does not fit the model's context window. Bedrock
 * reports it as a 400 ValidationException whose message is the model's own wording; the
 * gateway's common check (core/llm/context-window.ts) knows the wordings of the models it serves.
 */
export { isContextWindowError, saysContextWindowExceeded } from "../../core/llm/provider.ts";
