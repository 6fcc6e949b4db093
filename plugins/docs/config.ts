/** `services[i].swagger_url` and `swagger_headers`: where the docs fetch a backend's own API document. */
import { type Static, Type } from "@sinclair/typebox";
import { StringMap } from "../../core/config/schema-parts.ts";
import type { ServiceFieldSet } from "../../core/config/schema.ts";

export const DocsServiceFields = Type.Object({
  swagger_url: Type.String({ default: "", description: "Address of the backend's OpenAPI spec" }),
  swagger_headers: StringMap("Headers for fetching swagger_url"),
});

declare module "../../core/config/schema.ts" {
  interface ServiceFields extends Static<typeof DocsServiceFields> {}
}

export const docsServiceFields: ServiceFieldSet<typeof DocsServiceFields> = { schema: DocsServiceFields };
