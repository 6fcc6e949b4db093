/**
 * The document of the built-in gateway for one input, without a runtime: what `GET
 * /openapi.yaml` serves when only the built-in plugins are installed. For tests and tools;
 * the docs plugin assembles the document it serves from its own runtime's plugins.
 */
import type { DocInput } from "../../core/openapi/input.ts";
import type { OpenApiDocument } from "../../core/openapi/types.ts";
import { builtinPlugins } from "../../plugins/index.ts";
import { assembleDocument } from "../../plugins/docs/openapi/assemble.ts";
import { documentParts } from "../../plugins/docs/openapi/parts.ts";

export function buildDocument(input: DocInput): OpenApiDocument {
  return assembleDocument(input, documentParts(builtinPlugins));
}
