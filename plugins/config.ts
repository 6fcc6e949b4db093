/**
 * The configuration as the built-in gateway reads it: the core's schema with every built-in
 * plugin's section and service fields (the same parts the gateway validates at start and
 * reload). For tests, the reference generator and embeddings that load a config file without
 * starting a gateway. `sections` are extra sections of plugins loaded at run time (kept in `extra`).
 */
import type { ConfigSection } from "../core/config/schema.ts";
import { type ConfigResult, loadConfigWith, validateConfigWith } from "../core/config/load.ts";
import type { Env } from "../core/config/env.ts";
import { configPartsOf } from "../core/plugins/config-parts.ts";
import { builtinPlugins } from "./index.ts";

export { ConfigError, formatPath, parseConfigFile, parseConfigText } from "../core/config/load.ts";

/** The parts the built-in plugins declare, in the order they are validated. */
export const builtinConfigParts = configPartsOf(builtinPlugins);

function partsWith(sections: readonly ConfigSection[]) {
  return { ...builtinConfigParts, extraSections: sections };
}

export function validateConfig(raw: Record<string, unknown>, sections: readonly ConfigSection[] = []): ConfigResult {
  return validateConfigWith(raw, partsWith(sections));
}

export function loadConfig(text: string, env: Env, sections: readonly ConfigSection[] = []): ReturnType<typeof loadConfigWith> {
  return loadConfigWith(text, env, partsWith(sections));
}
