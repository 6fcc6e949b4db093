/**
 * What a plugin adds to the gateway's API document (`GET /openapi.yaml`): its tags, its
 * component schemas and the paths of its routes. Declared on the plugin
 * (`definePlugin({ openapi })`) and collected by the docs plugin from every installed plugin,
 * so a feature documents its own routes in its own folder.
 */
import type { TSchema } from "@sinclair/typebox";
import type { DocInput } from "./input.ts";
import type { Paths, Tag } from "./types.ts";

/** Builds the paths of one part for one caller's view of one runtime; `{}` when none is served. */
export type PathsBuilder = (input: DocInput) => Paths;

export interface OpenApiContribution {
  /** Tags its operations name (a service type's tag comes with the model routes). A tag no operation uses is left out. */
  tags?: readonly Tag[];
  /**
   * Component schemas by name (core/openapi/schema.ts says which JSON Schema subset), referenced
   * as `#/components/schemas/<name>`. Names are global: one plugin's name must not be reused.
   * Always in the document, whether the plugin is on or off.
   */
  schemas?: Readonly<Record<string, TSchema>>;
  /**
   * The paths of its routes, in named parts. Each part documents only what this runtime serves
   * (`input.served(method, template)`), so a plugin turned off documents nothing. The docs
   * plugin keeps the built-in parts where the document always had them; others follow, by
   * plugin name.
   */
  paths?: Readonly<Record<string, PathsBuilder>>;
}
