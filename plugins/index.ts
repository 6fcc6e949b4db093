/**
 * The built-in plugins, in the order their routes and pipeline steps register. Each is
 * enabled by its own config rule and can be turned off with `plugins: { NAME: false }`.
 */
import type { PluginDefinition } from "../core/plugins/types.ts";
import syncProxy from "./sync-proxy/index.ts";
import docs from "./docs/index.ts";
import otel from "./otel/index.ts";
import auditLog from "./audit-log/index.ts";
import providers from "./providers/index.ts";
import providerChatCompletions from "./provider-chat-completions/index.ts";
import providerMessagesApi from "./provider-messages-api/index.ts";
import providerLocalChat from "./provider-local-chat/index.ts";
import providerPassthrough from "./provider-passthrough/index.ts";
import responseCache from "./response-cache/index.ts";
import llmProxy from "./llm-proxy/index.ts";
import auth from "./auth/index.ts";
import visibility from "./visibility/index.ts";
import policies from "./policies/index.ts";
import webhooks from "./webhooks/index.ts";
import asyncJobs from "./async-jobs/index.ts";
import idempotency from "./idempotency/index.ts";
import relay from "./relay/index.ts";
import gc from "./gc/index.ts";
import limits from "./limits/index.ts";
import usage from "./usage/index.ts";

// Each entry is a `definePlugin(...)` with its own section schema; the list is heterogeneous by design.
export const builtinPlugins: readonly PluginDefinition[] = [
  // Tracing, then the audit log: their middleware wraps every request (outermost first), so
  // the audit line can carry the request's trace id.
  otel,
  auditLog,
  // Identity first: every later step reads the principal it leaves.
  auth,
  visibility,
  policies,
  // Before the sync proxy's catch-all, so a configured wildcard cannot shadow the docs routes.
  docs,
  // Async jobs (the mode and job store, idempotent submission, the relay worker), also before
  // the sync proxy's catch-all so a configured wildcard path cannot shadow /jobs.
  asyncJobs,
  idempotency,
  relay,
  // Background GC of the job store (reaper, stale-pending sweep, orphan cleanup); no routes.
  gc,
  // Limits after auth and policies (their steps run first in a shared stage) and after async
  // jobs (it hooks into submissions); usage after limits (it shows their live windows).
  // Both before the sync proxy's catch-all, so a configured wildcard cannot shadow /usage.
  limits,
  usage,
  syncProxy,
  // The LLM proxy: the provider registry and the built-in providers, the cache, then the mode.
  providers,
  providerChatCompletions,
  providerMessagesApi,
  providerLocalChat,
  providerPassthrough,
  responseCache,
  llmProxy,
  webhooks,
];
