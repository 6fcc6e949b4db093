/** The provider registry behind the `providers` service: a name -> provider map that refuses duplicates. */
import { PluginError } from "../errors.ts";
import type { ProviderDefinition, ProviderRegistry } from "./provider.ts";

export function createProviderRegistry(): ProviderRegistry {
  const providers = new Map<string, ProviderDefinition>();
  return {
    register(provider) {
      // PluginError: a start or reload refuses with a config problem instead of a crash.
      if (provider.name === "") throw new PluginError("an LLM provider needs a non-empty name");
      if (providers.has(provider.name)) {
        throw new PluginError(`LLM provider "${provider.name}" is registered twice; give the second one another name`, undefined, "GW_PLUGIN_DUPLICATE");
      }
      providers.set(provider.name, provider);
    },
    get: (name) => providers.get(name),
    names: () => [...providers.keys()].sort(),
  };
}
