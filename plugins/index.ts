/**
 * The built-in plugins, in the order their routes and pipeline steps register. Each is
 * enabled by its own config rule and can be turned off with `plugins: { NAME: false }`.
 */
import type { PluginDefinition } from "../core/plugins/types.ts";

// Each entry is a `definePlugin(...)` with its own section schema; the list is heterogeneous by design.
export const builtinPlugins: readonly PluginDefinition[] = [];
