/** The provider registry behind the `providers` service: a name -> provider map that refuses duplicates. */
import { startError } from "../errors.ts";
import type { ProviderDefinition, ProviderRegistry } from "./provider.ts";

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
