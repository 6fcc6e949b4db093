/** Assembles the OpenAPI 3.0.3 document for one caller's view of one runtime. */
import { adminPaths } from "./admin-paths.ts";
import { adminSchemas } from "./admin-schemas.ts";
import type { DocInput } from "./input.ts";
import { gatewayPaths } from "./gateway-paths.ts";
import { jobPaths } from "./job-paths.ts";
import { componentResponses } from "./responses.ts";
import { keySchemas } from "./key-schemas.ts";
import { componentSchemas } from "./schemas.ts";
import { syncPaths } from "./sync-paths.ts";
import type { OpenApiDocument, Schema, Tag } from "./types.ts";

/** TypeBox schemas carry symbol keys; a JSON round trip leaves the plain JSON Schema. */
function plain(schemas: Record<string, unknown>): Record<string, Schema> {
  return JSON.parse(JSON.stringify(schemas)) as Record<string, Schema>;
}

const FIXED_TAGS: Tag[] = [
  { name: "Gateway", description: "Health and metrics" },
  { name: "Models", description: "The model list" },
  { name: "Jobs", description: "Async jobs: status, cancellation, listing" },
  { name: "Usage", description: "Per-consumer usage" },
  { name: "Admin", description: "Operations endpoints under /-/ (with admin.token set they need Authorization: Bearer <admin.token>; else secure them upstream)" },
  { name: "Keys", description: "Gateway-issued API keys (auth.mode api_key)" },
  { name: "Docs", description: "This document and the backends' own API documents" },
];

function serviceTags(input: DocInput): Tag[] {
  const tags = new Map<string, string[]>();
  for (const service of input.visible) tags.set(service.type, [...(tags.get(service.type) ?? []), service.model || "(no alias)"]);
  return [...tags].map(([name, models]) => ({ name, description: `Service type ${name}: ${models.join(", ")}` }));
}

export function buildDocument(input: DocInput): OpenApiDocument {
  const paths = { ...syncPaths(input), ...jobPaths(input), ...gatewayPaths(input), ...adminPaths(input) };
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
        "Every error answers with `{\"error\":{\"message\",\"type\"}}`.",
      ].join("\n\n"),
    },
    servers: [{ url: "/", description: "This gateway" }],
    tags: [...serviceTags(input), ...FIXED_TAGS].filter((tag) => used.has(tag.name)),
    paths,
    components: {
      schemas: plain({ ...componentSchemas, ...keySchemas, ...adminSchemas }),
      responses: componentResponses(),
      ...(oauth2 ? { securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } } } : {}),
      ...(apiKey ? { securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "A gateway API key (gw-...)" }, apiKey: { type: "apiKey", in: "header", name: "x-api-key" } } } : {}),
    },
    // Optional security: the gateway also serves anonymous callers (public models, ops endpoints).
    ...(oauth2 ? { security: [{ bearer: [] }, {}] } : {}),
    // Either header carries the key; every model request needs one.
    ...(apiKey ? { security: [{ bearer: [] }, { apiKey: [] }] } : {}),
  };
}
