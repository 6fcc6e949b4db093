/**
 * The built-in plugins, in no particular order (alphabetical). Each is enabled by its own
 * config rule and can be turned off with `plugins: { NAME: false }`. Where each goes (which route wins, the order of middleware and of the steps in a
 * stage) is declared on the plugin (`dependsOn`, `optionalDependsOn`, `before`, `after`,
 * `layer`) and computed by the host (core/plugins/host.ts `placePlugins`): reordering this
 * list changes nothing (test/core/plugins/builtin-order.test.ts shuffles it).
 */
import type { PluginDefinition } from "../core/plugins/types.ts";
import admin from "./admin/index.ts";
import asyncJobs from "./async-jobs/index.ts";
import auditLog from "./audit-log/index.ts";
import auth from "./auth/index.ts";
import backendHealth from "./backend-health/index.ts";
import batches from "./batches/index.ts";
import consolePlugin from "./console/index.ts";
import docs from "./docs/index.ts";
import gc from "./gc/index.ts";
import guardrails from "./guardrails/index.ts";
import idempotency from "./idempotency/index.ts";
import limits from "./limits/index.ts";
import llmProxy from "./llm-proxy/index.ts";
import otel from "./otel/index.ts";
import policies from "./policies/index.ts";
import pricing from "./pricing/index.ts";
import protocolMessages from "./protocol-messages/index.ts";
import providerBedrock from "./provider-bedrock/index.ts";
import protocolResponses from "./protocol-responses/index.ts";
import providerChatCompletions from "./provider-chat-completions/index.ts";
import providerGemini from "./provider-gemini/index.ts";
import providerLocalChat from "./provider-local-chat/index.ts";
import providerMessagesApi from "./provider-messages-api/index.ts";
import providerPassthrough from "./provider-passthrough/index.ts";
import providerResponsesApi from "./provider-responses-api/index.ts";
import providers from "./providers/index.ts";
import relay from "./relay/index.ts";
import responseCache from "./response-cache/index.ts";
import syncProxy from "./sync-proxy/index.ts";
import usage from "./usage/index.ts";
import visibility from "./visibility/index.ts";
import webhooks from "./webhooks/index.ts";

// Each entry is a `definePlugin(...)` with its own section schema; the list is heterogeneous by design.
export const builtinPlugins: readonly PluginDefinition[] = [
  admin,
  asyncJobs,
  auditLog,
  auth,
  backendHealth,
  batches,
  consolePlugin,
  docs,
  gc,
  guardrails,
  idempotency,
  limits,
  llmProxy,
  otel,
  policies,
  pricing,
  protocolMessages,
  providerBedrock,
  protocolResponses,
  providerChatCompletions,
  providerGemini,
  providerLocalChat,
  providerMessagesApi,
  providerPassthrough,
  providerResponsesApi,
  providers,
  relay,
  responseCache,
  syncProxy,
  usage,
  visibility,
  webhooks,
];
