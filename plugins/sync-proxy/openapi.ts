/** The sync proxy's part of the API document: one operation per configured path, and the model list. */
import { Type } from "@sinclair/typebox";
import type { OpenApiContribution } from "../../core/openapi/contribution.ts";
import { ref, StringEnum } from "../../core/openapi/schema.ts";
import { modelListPath, syncPaths } from "./openapi-paths.ts";

export const syncProxyOpenApi: OpenApiContribution = {
  tags: [{ name: "Models", description: "The model list" }],
  schemas: {
    Model: Type.Object({
      id: Type.String({ description: "Model alias" }),
      object: StringEnum(["model"]),
      owned_by: Type.String(),
      service_type: Type.String(),
      provider: Type.Optional(Type.String()),
      backend_model: Type.Optional(Type.String({ description: "Only when the service-level backend_model rewrites the alias" })),
      capabilities: Type.Object({
        supports_sync: Type.Boolean(),
        supports_streaming: Type.Boolean(),
        deprecated: Type.Boolean({ description: "Still routed; plan to move off it" }),
      }),
    }),
    ModelList: Type.Object({ object: StringEnum(["list"]), data: Type.Array(ref("Model")) }, { description: "The models the caller may see" }),
  },
  paths: { "model-routes": syncPaths, "model-list": modelListPath },
};
