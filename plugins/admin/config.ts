/** The `admin:` section: who may call the gateway's own endpoints (`/-/*`, optionally `/metrics`). */
import { type Static, Type } from "@sinclair/typebox";
import { Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const AdminSchema = Section(
  {
    token: Type.String({
      default: "",
      description: 'Bearer token every /-/* endpoint requires (typically "${GATEWAY_ADMIN_TOKEN}"); "" = /-/* open as the spec says (one warning at start)',
    }),
    protect_metrics: Type.Boolean({ default: false, description: "true: /metrics needs the admin token too (needs admin.token)" }),
  },
  "Admin endpoints",
);

export type AdminConfig = Static<typeof AdminSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    admin: AdminConfig;
  }
}

export const adminSection: ConfigSection<typeof AdminSchema> = {
  key: "admin",
  schema: AdminSchema,
  validate: (admin) => (admin.protect_metrics && admin.token === "" ? ["admin.protect_metrics: needs admin.token (the token /metrics would require)"] : []),
};
