/**
 * The registries behind the `providers` and `clientProtocols` services: name -> definition maps
 * that refuse duplicates (and, for client protocols, a path two of them claim).
 */
import { PluginError, startError } from "../errors.ts";
import { chatCompletionsProtocol } from "./chat-protocol.ts";
import type { ClientProtocol, ClientProtocolRegistry } from "./client-protocol.ts";
import type { ProviderDefinition, ProviderRegistry } from "./provider.ts";
import type { BackendConfig, ServiceConfig } from "../config/schema.ts";

export function createProviderRegistry(): ProviderRegistry {
  const providers = new Map<string, ProviderDefinition>();
  return {
    register(provider) {
      // PluginError: a start or reload refuses with a config problem instead of a crash.
      if (provider.name === "") throw startError("GW_PLUGIN_REFUSED", { reason: "an LLM provider needs a non-empty name" });
      if (providers.has(provider.name)) throw startError("GW_PLUGIN_DUPLICATE", { of: "provider", name: provider.name });
      providers.set(provider.name, provider);
    },
    get: (name) => providers.get(name),
    names: () => [...providers.keys()].sort(),
  };
}

/** Chat completions, the identity protocol, is there from the start and takes every path none claims. */
export function createClientProtocolRegistry(): ClientProtocolRegistry {
  const byName = new Map<string, ClientProtocol>();
  const byPath = new Map<string, ClientProtocol>();
  const registry: ClientProtocolRegistry = {
    register(protocol) {
      if (protocol.name === "") throw new PluginError("a client protocol needs a non-empty name");
      if (byName.has(protocol.name)) {
        throw new PluginError(`client protocol "${protocol.name}" is registered twice; give the second one another name`, undefined, "GW_PLUGIN_DUPLICATE");
      }
      for (const path of protocol.paths) {
        const owner = byPath.get(path);
        if (owner) {
          throw new PluginError(
            `client protocols "${owner.name}" and "${protocol.name}" both claim the path ${path}; a path is in one protocol only`,
            undefined,
            "GW_PLUGIN_DUPLICATE",
          );
        }
      }
      byName.set(protocol.name, protocol);
      for (const path of protocol.paths) byPath.set(path, protocol);
    },
    get: (name) => byName.get(name),
    forPath: (path) => byPath.get(path) ?? chatCompletionsProtocol,
    names: () => [...byName.keys()].sort(),
  };
  registry.register(chatCompletionsProtocol);
  return registry;
}

/**
 * The base address of a backend: its `url`, else its provider's (`backendAddress`, else
 * `defaultUrl`). What logs and `/-/backends` show, and the key of its health state.
 */
export function backendAddress(providers: ProviderRegistry, service: ServiceConfig, backend: BackendConfig): string {
  if (backend.url !== "") return backend.url;
  const provider = providers.get(backend.provider || service.provider);
  return provider?.backendAddress?.(backend) || provider?.defaultUrl || "";
}
