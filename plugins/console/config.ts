/** The `console:` section: the admin console page at `/-/console`. */
import { type Static, Type } from "@sinclair/typebox";
import { Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const ConsoleSchema = Section(
  {
    enabled: Type.Boolean({
      default: true,
      description:
        "Serve the admin console at /-/console. The page holds no data itself: everything it shows comes from the /-/ endpoints, with the admin token the operator enters",
    }),
  },
  "Admin console",
);

export type ConsoleConfig = Static<typeof ConsoleSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    console: ConsoleConfig;
  }
}

export const consoleSection: ConfigSection<typeof ConsoleSchema> = { key: "console", schema: ConsoleSchema };
