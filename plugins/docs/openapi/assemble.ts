/** Assembles the OpenAPI 3.0.3 document for one caller's view of one runtime from the parts its plugins declare. */
import type { DocInput } from "../../../core/openapi/input.ts";
import { componentResponses } from "../../../core/openapi/responses.ts";
import type { OpenApiDocument, Paths, Schema, Tag } from "../../../core/openapi/types.ts";
import type { DocumentParts } from "./parts.ts";

/** TypeBox schemas carry symbol keys; a JSON round trip leaves the plain JSON Schema. */
function plain(schemas: Record<string, unknown>): Record<string, Schema> {
  return JSON.parse(JSON.stringify(schemas)) as Record<string, Schema>;
}

function serviceTags(input: DocInput): Tag[] {
  const tags = new Map<string, string[]>();
  for (const service of input.visible) tags.set(service.type, [...(tags.get(service.type) ?? []), service.model || "(no alias)"]);
  return [...tags].map(([name, models]) => ({ name, description: `Service type ${name}: ${models.join(", ")}` }));
}

export function assembleDocument(input: DocInput, parts: DocumentParts): OpenApiDocument {
  const paths: Paths = {};
  for (const build of parts.paths) Object.assign(paths, build(input));
  const used = new Set(Object.values(paths).flatMap((item) => Object.values(item).flatMap((op) => (typeof op === "object" ? op.tags : []))));
  const oauth2 = input.authMode === "oauth2";
  const apiKey = input.authMode === "api_key";
  return {
    openapi: "3.0.3",
    info: {
      title: "Inference gateway",
      version: "1",
      description: [
        "Generated from the gateway's live configuration: it changes on reload, and models hidden from the caller are left out.",
        'Every error answers with `{"error":{"message","type"}}`.',
      ].join("\n\n"),
    },
    servers: [{ url: "/", description: "This gateway" }],
    tags: [...serviceTags(input), ...parts.tags].filter((tag) => used.has(tag.name)),
    paths,
    components: {
      schemas: plain(parts.schemas),
      responses: componentResponses(),
      ...(oauth2 ? { securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } } } : {}),
      ...(apiKey
        ? {
          securitySchemes: {
            bearer: { type: "http", scheme: "bearer", description: "A gateway API key (gw-...)" },
            apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
          },
        }
        : {}),
    },
    // Optional security: the gateway also serves anonymous callers (public models, ops endpoints).
    ...(oauth2 ? { security: [{ bearer: [] }, {}] } : {}),
    // Either header carries the key; every model request needs one.
    ...(apiKey ? { security: [{ bearer: [] }, { apiKey: [] }] } : {}),
  };
}
