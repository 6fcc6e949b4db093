/** The `audit_log:` section. */
import { type Static, Type } from "@sinclair/typebox";
import { Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const AuditLogSchema = Section(
  { enabled: Type.Boolean({ default: false, description: "Write audit log lines; hot-reloadable" }) },
  "Audit log (hot-reloadable)",
);

export type AuditLogConfig = Static<typeof AuditLogSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    audit_log: AuditLogConfig;
  }
}

export const auditLogSection: ConfigSection<typeof AuditLogSchema> = { key: "audit_log", schema: AuditLogSchema };
