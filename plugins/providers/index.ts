/**
 * The `providers` and `clientProtocols` services: the registries LLM provider plugins (the
 * protocols the gateway speaks to backends) and client protocol plugins (the ones clients
 * speak to it) add themselves to, built-in and user ones alike (`dependsOn: ["providers"]`,
 * then `api.use("providers").register(...)` or `api.use("clientProtocols").register(...)`).
 * Always on: a registry holds nothing (client protocols: chat completions alone) until a plugin
 * registers, and a user plugin must be loadable whatever the services say. Once every plugin
 * is set up it checks that each service's and backend's `provider` was registered, and each
 * backend's settings with its provider, so a typo refuses the start (or the reload) instead of
 * failing every request to that model.
 */
import { createClientProtocolRegistry, createProviderRegistry } from "../../core/llm/registry.ts";
import { PluginError } from "../../core/plugins/host.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { ProviderRegistry } from "../../core/llm/provider.ts";

export default definePlugin({
  name: "providers",
  setup(api) {
    const providers = createProviderRegistry();
    api.provide("providers", providers);
    api.provide("clientProtocols", createClientProtocolRegistry());
    api.onReady(() => {
      const problems = api.config.services.flatMap((service, index) => serviceProblems(providers, service, `services[${index}]`));
      if (problems.length > 0) throw new PluginError(problems.join("; "), problems);
    });
  },
});

function unknownProvider(providers: ProviderRegistry, at: string, name: string, model: string): string {
  return `${at}: "${name}" (model "${model}") is not a provider any plugin registered ` +
    `(registered providers: ${providers.names().join(", ") || "(none)"}); fix the name or load the provider's plugin with plugins.load`;
}

/** Each problem names the service by its index, as every other services[] problem does. */
function serviceProblems(providers: ProviderRegistry, service: ServiceConfig, at: string): string[] {
  if (service.provider === "") return [];
  const fallback = providers.get(service.provider);
  if (!fallback) return [unknownProvider(providers, `${at}.provider`, service.provider, service.model)];
  return service.backends.flatMap((backend, b) => {
    const where = `${at}.backends[${b}]`;
    const provider = backend.provider !== "" ? providers.get(backend.provider) : fallback;
    if (!provider) return [unknownProvider(providers, `${where}.provider`, backend.provider, service.model)];
    const problems = (provider.backendProblems?.(backend) ?? []).map((problem) => `${where}.${problem}`);
    if (backend.url === "" && provider.defaultUrl === "" && !provider.requestUrl) {
      problems.push(`${where}.url: required (provider "${provider.name}" has no default address)`);
    }
    return problems;
  });
}
