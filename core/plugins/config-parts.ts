/**
 * The config parts plugins declare (`section`, `serviceFields`, `sectionFields`), gathered for the one-pass
 * validation of core/config/load.ts. Sorted by section key and plugin name, so the order of
 * the plugin list changes neither the schema nor the order of the problems reported.
 */
import type { ConfigParts } from "../config/load.ts";
import type { PluginDefinition } from "./types.ts";

/**
 * `builtin`: the plugins the gateway is built with; their sections join `config`.
 * `loaded`: plugins from `plugins.load`; their sections are kept in `extra`.
 * Every declared part is validated whether its plugin is on or off.
 */
export function configPartsOf(builtin: readonly PluginDefinition[], loaded: readonly PluginDefinition[] = []): ConfigParts {
  const byName = (a: PluginDefinition, b: PluginDefinition) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const sectionsOf = (definitions: readonly PluginDefinition[]) =>
    definitions.flatMap((d) => (d.section ? [d.section] : [])).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return {
    sections: sectionsOf(builtin),
    extraSections: sectionsOf(loaded),
    serviceFields: [...builtin, ...loaded].sort(byName).flatMap((d) => (d.serviceFields ? [d.serviceFields] : [])),
    sectionFields: [...builtin, ...loaded].sort(byName).flatMap((d) => d.sectionFields ?? []),
  };
}
