/** The docs plugin's own part of the document: the core's endpoints and their bodies, and the docs endpoints. */
import type { OpenApiContribution } from "../../../core/openapi/contribution.ts";
import { configPath, corePaths, docsPaths } from "./gateway-paths.ts";
import { coreSchemas } from "./schemas.ts";

export const docsOpenApi: OpenApiContribution = {
  tags: [
    { name: "Gateway", description: "Health and metrics" },
    {
      name: "Admin",
      description: "Operations endpoints under /-/ (with admin.token set they need Authorization: Bearer <admin.token>; else secure them upstream)",
    },
    { name: "Docs", description: "This document and the backends' own API documents" },
  ],
  schemas: coreSchemas,
  paths: { gateway: corePaths, docs: docsPaths, config: configPath },
};
