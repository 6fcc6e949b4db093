/**
 * The parts of the document, gathered from what the installed plugins declare
 * (`definePlugin({ openapi })`) and placed by the layout.
 */
import type { TSchema } from "@sinclair/typebox";
import type { PathsBuilder } from "../../../core/openapi/contribution.ts";
import type { Tag } from "../../../core/openapi/types.ts";
import { PluginError } from "../../../core/plugins/host.ts";
import { inLayout } from "../../../core/plugins/layout.ts";
import type { PluginContributions } from "../../../core/plugins/types.ts";
import { PATH_LAYOUT, SCHEMA_LAYOUT, TAG_LAYOUT } from "./layout.ts";

export interface DocumentParts {
  tags: Tag[];
  schemas: Record<string, TSchema>;
  /** Merged in this order: a later part's path replaces an earlier one's. */
  paths: PathsBuilder[];
}

/**
 * Throws a PluginError when two plugins declare a schema or a tag of the same name: the
 * document could keep only one of them, and which one would be an accident.
 */
export function documentParts(plugins: readonly PluginContributions[]): DocumentParts {
  const schemas: Array<{ plugin: string; name: string; schema: TSchema }> = [];
  const tags: Array<{ plugin: string; tag: Tag }> = [];
  const paths: Array<{ key: string; build: PathsBuilder }> = [];
  const byName = [...plugins].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const { name: plugin, openapi } of byName) {
    for (const [name, schema] of Object.entries(openapi?.schemas ?? {})) {
      const other = schemas.find((entry) => entry.name === name);
      if (other) throw duplicate("schema", name, other.plugin, plugin);
      schemas.push({ plugin, name, schema });
    }
    for (const tag of openapi?.tags ?? []) {
      const other = tags.find((entry) => entry.tag.name === tag.name);
      if (other) throw duplicate("tag", tag.name, other.plugin, plugin);
      tags.push({ plugin, tag });
    }
    for (const [part, build] of Object.entries(openapi?.paths ?? {})) paths.push({ key: `${plugin}/${part}`, build });
  }
  return {
    tags: inLayout(tags, (entry) => entry.tag.name, TAG_LAYOUT).map((entry) => entry.tag),
    schemas: Object.fromEntries(inLayout(schemas, (entry) => entry.name, SCHEMA_LAYOUT).map((entry) => [entry.name, entry.schema])),
    paths: inLayout(paths, (entry) => entry.key, PATH_LAYOUT).map((entry) => entry.build),
  };
}

function duplicate(kind: "schema" | "tag", name: string, first: string, second: string): PluginError {
  const fix = kind === "schema"
    ? "rename one of them (schema names are global to the document)"
    : `leave it out of "${second}" (its operations may name a tag another plugin declares)`;
  return new PluginError(`plugins "${first}" and "${second}" both declare the OpenAPI ${kind} "${name}"; ${fix}`, undefined, "GW_PLUGIN_DUPLICATE");
}
