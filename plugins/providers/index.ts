/**
 * The `providers` service: the registry LLM provider plugins add themselves to, built-in and
 * user ones alike (`dependsOn: ["providers"]`, then `api.use("providers").register(...)`).
 * Always on: it is an empty map until a provider registers, and a user provider plugin must
 * be loadable whatever the services say. Once every plugin is set up it checks that each
 * service's `provider` was registered, so a typo refuses the start (or the reload) instead
 * of failing every request to that model.
 */
import { createProviderRegistry } from "../../core/llm/registry.ts";
import { PluginError } from "../../core/plugins/host.ts";
import { definePlugin } from "../../core/plugins/types.ts";

export default definePlugin({
  name: "providers",
  setup(api) {
    const providers = createProviderRegistry();
    api.provide("providers", providers);
    api.onReady(() => {
      const unknown = api.config.services.filter((service) => service.provider !== "" && !providers.get(service.provider));
      if (unknown.length === 0) return;
      const registered = providers.names().join(", ") || "(none)";
      const names = unknown.map((service) => `model "${service.model}" names provider "${service.provider}"`);
      throw new PluginError(
        `${names.join("; ")}, which no plugin registered (registered providers: ${registered}). Fix services[].provider or load the provider's plugin with plugins.load`,
      );
    });
  },
});
