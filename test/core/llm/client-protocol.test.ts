/**
 * The client protocol registry (the `clientProtocols` service) and which providers get a
 * protocol's requests as they are.
 */
import { describe, expect, it } from "vitest";
import { chatCompletionsProtocol } from "../../../core/llm/chat-protocol.ts";
import { type ClientProtocol, speaksNatively } from "../../../core/llm/client-protocol.ts";
import type { ProviderDefinition } from "../../../core/llm/provider.ts";
import { createClientProtocolRegistry } from "../../../core/llm/registry.ts";
import { PluginError } from "../../../core/errors.ts";

const plain: ClientProtocol = { name: "plain", paths: ["/v1/plain", "/v1/plain/count"], native: { watch: () => ({}), answerUsage: () => undefined } };
const provider = (fields: Partial<ProviderDefinition>): ProviderDefinition => ({ name: "p", defaultUrl: "", createTranslator: () => ({}), ...fields });

function refusal(register: () => void): PluginError {
  try {
    register();
  } catch (error) {
    if (error instanceof PluginError) return error;
    throw error;
  }
  throw new Error("the registration was not refused");
}

describe("client protocol registry", () => {
  it("finds a protocol by the paths it claims, and chat completions for every other path", () => {
    const registry = createClientProtocolRegistry();
    registry.register(plain);
    expect(registry.forPath("/v1/plain")).toBe(plain);
    expect(registry.forPath("/v1/plain/count")).toBe(plain);
    for (const path of ["/v1/chat/completions", "/v1/embeddings", "/v1/plain/other"]) expect(registry.forPath(path)).toBe(chatCompletionsProtocol);
    expect(registry.names()).toEqual(["chat_completions", "plain"]);
    expect(registry.get("plain")).toBe(plain);
  });

  it("refuses a second protocol of the same name, a path another protocol claims, and an empty name", () => {
    const registry = createClientProtocolRegistry();
    registry.register(plain);
    const twice = refusal(() => registry.register({ ...plain, paths: ["/v1/elsewhere"] }));
    expect(twice.code).toBe("GW_PLUGIN_DUPLICATE");
    expect(twice.message).toBe('client protocol "plain" is registered twice; give the second one another name');
    const sharedPath = refusal(() => registry.register({ name: "other", paths: ["/v1/other", "/v1/plain"] }));
    expect(sharedPath.code).toBe("GW_PLUGIN_DUPLICATE");
    expect(sharedPath.message).toBe('client protocols "plain" and "other" both claim the path /v1/plain; a path is in one protocol only');
    // Refused whole: the path it claimed first is not taken either.
    expect(registry.forPath("/v1/other")).toBe(chatCompletionsProtocol);
    const chatPath = refusal(() => registry.register({ name: "chatty", paths: ["/v1/chat/completions"] }));
    expect(chatPath.message).toContain('client protocols "chat_completions" and "chatty" both claim the path /v1/chat/completions');
    expect(refusal(() => registry.register({ name: "", paths: [] })).message).toBe("a client protocol needs a non-empty name");
  });
});

describe("speaksNatively", () => {
  it("is true for a protocol the provider lists in speaks, or for every protocol with speaks: all", () => {
    expect(speaksNatively(provider({ speaks: ["plain"] }), plain)).toBe(true);
    expect(speaksNatively(provider({ speaks: "all" }), plain)).toBe(true);
    expect(speaksNatively(provider({ speaks: ["other"] }), plain)).toBe(false);
    expect(speaksNatively(provider({}), plain)).toBe(false);
  });

  it("is never true for a protocol without native answers: chat completions always goes through the provider's translator", () => {
    expect(speaksNatively(provider({ speaks: "all" }), chatCompletionsProtocol)).toBe(false);
    expect(speaksNatively(provider({ speaks: ["chat_completions"] }), chatCompletionsProtocol)).toBe(false);
  });

  it("still reads the older speaksMessages as speaks: [messages]", () => {
    const messages: ClientProtocol = { ...plain, name: "messages" };
    expect(speaksNatively(provider({ speaksMessages: true }), messages)).toBe(true);
    expect(speaksNatively(provider({ speaksMessages: true }), plain)).toBe(false);
  });
});
