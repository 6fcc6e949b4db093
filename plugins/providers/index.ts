/**
 * The `providers` and `clientProtocols` services: the registries LLM provider plugins (the
 * protocols the gateway speaks to backends) and client protocol plugins (the ones clients
 * speak to it) add themselves to, built-in and user ones alike (`dependsOn: ["providers"]`,
 * then `api.use("providers").register(...)` or `api.use("clientProtocols").register(...)`).
 * Always on: a registry holds nothing (client protocols: chat completions alone) until a plugin
 * registers, and a user plugin must be loadable whatever the services say. Once every plugin
 * is set up it checks that each service's `provider` was registered, so a typo refuses the
 * start (or the reload) instead of failing every request to that model.
 */
import { createClientProtocolRegistry, createProviderRegistry } from "../../core/llm/registry.ts";
import { PluginError } from "../../core/plugins/host.ts";
import { definePlugin } from "../../core/plugins/types.ts";

export default definePlugin({
  name: "providers",
  setup(api) {
    const providers = createProviderRegistry();
    api.provide("providers", providers);
    api.provide("clientProtocols", createClientProtocolRegistry());
    api.onReady(() => {
      const registered = providers.names().join(", ") || "(none)";
      // Each problem names the service by its index, as every other services[] problem does.
      const problems = api.config.services.flatMap((service, index) =>
        service.provider !== "" && !providers.get(service.provider)
          ? [
            `services[${index}].provider: "${service.provider}" (model "${service.model}") is not a provider any plugin registered ` +
            `(registered providers: ${registered}); fix the name or load the provider's plugin with plugins.load`,
          ]
          : []
      );
      if (problems.length > 0) throw new PluginError(problems.join("; "), problems);
    });
  },
});
