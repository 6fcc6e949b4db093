/**
 * The `providers` service: the registry LLM provider plugins add themselves to, built-in and
 * user ones alike (`dependsOn: ["providers"]`, then `api.use("providers").register(...)`).
 * Always on: it is an empty map until a provider registers, and a user provider plugin must
 * be loadable whatever the services say.
 */
import { createProviderRegistry } from "../../core/llm/registry.ts";
import { definePlugin } from "../../core/plugins/types.ts";

export default definePlugin({
  name: "providers",
  setup(api) {
    api.provide("providers", createProviderRegistry());
  },
});
