/** docs/config-reference.md is generated from the schemas; this fails when it is out of date. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { TSchema } from "@sinclair/typebox";
import { CoreConfigSchema, CoreServiceSchema } from "../../core/config/schema.ts";
import { builtinPlugins } from "../../plugins/index.ts";
import { renderConfigReference } from "../../scripts/config-reference.ts";

describe("docs/config-reference.md", () => {
  it("is what `npm run docs:config` generates from the schemas (run it and commit the file)", () => {
    const checkedIn = readFileSync(new URL("../../docs/config-reference.md", import.meta.url), "utf8");
    expect(checkedIn).toBe(renderConfigReference(builtinPlugins));
  });

  it("lists every section and service field of the built-in plugins, with its owner", () => {
    const page = renderConfigReference(builtinPlugins);
    for (const plugin of builtinPlugins) {
      if (plugin.section) expect(page).toContain(`### \`${plugin.section.key}\``);
      for (const field of Object.keys(plugin.serviceFields?.schema.properties ?? {})) expect(page).toContain(`| \`services[].${field}`);
      for (const fields of plugin.sectionFields ?? []) {
        for (const field of Object.keys(fields.schema.properties)) expect(page).toContain(`| \`${fields.section}.${field}`);
      }
      if (plugin.section || plugin.serviceFields || plugin.sectionFields) expect(page).toContain(`plugin \`${plugin.name}\``);
    }
    // The order of the plugin list does not change the page.
    expect(renderConfigReference([...builtinPlugins].reverse())).toBe(page);
  });

  it("prints each schema's notes (what a row cannot say) right under its table", () => {
    const page = renderConfigReference(builtinPlugins);
    const schemas: TSchema[] = [
      ...Object.values(CoreConfigSchema.properties),
      CoreServiceSchema,
      ...builtinPlugins.flatMap((p) =>
        [p.section?.schema, p.serviceFields?.schema, ...(p.sectionFields ?? []).map((f) => f.schema)].filter((s): s is TSchema => s !== undefined)
      ),
    ];
    const notes = schemas.map((s) => s.notes).filter((n): n is string => typeof n === "string");
    expect(notes.length).toBeGreaterThan(3);
    for (const note of notes) expect(page).toContain(`|\n\n${note.trim()}\n`);
  });
});
