/** The API keys' part of the API document: the `/-/keys` admin API and its bodies. */
import type { OpenApiContribution } from "../../../core/openapi/contribution.ts";
import { keyPaths } from "./openapi-paths.ts";
import { keySchemas } from "./openapi-schemas.ts";

export const apiKeysOpenApi: OpenApiContribution = {
  tags: [{ name: "Keys", description: "Gateway-issued API keys (auth.mode api_key)" }],
  schemas: keySchemas,
  paths: { keys: keyPaths },
};
