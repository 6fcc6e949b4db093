/** `services[i].visibility`: the audience a model is listed and served to (absent = public). */
import { type Static, Type } from "@sinclair/typebox";
import { StringList } from "../../core/config/schema-parts.ts";
import type { ServiceFieldSet } from "../../core/config/schema.ts";

export const VisibilityServiceFields = Type.Object({
  visibility: Type.Optional(
    Type.Object(
      { user_types: StringList("User types in the audience"), groups: StringList("Principal groups in the audience (needs auth.mode proxy or oauth2)") },
      { additionalProperties: false, description: "Audience gate; absent = public" },
    ),
  ),
});

declare module "../../core/config/schema.ts" {
  interface ServiceFields extends Static<typeof VisibilityServiceFields> {}
}

export const visibilityServiceFields: ServiceFieldSet<typeof VisibilityServiceFields> = {
  schema: VisibilityServiceFields,
  validate: (service, at, _config, facts) =>
    service.visibility?.groups.length && facts.authMode === "none"
      ? [`${at}.visibility.groups: needs auth.mode proxy or oauth2 (groups come from the authenticated principal)`]
      : [],
};
