/** docs/config-reference.md is generated from the schemas; this fails when it is out of date. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
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
      if (plugin.section || plugin.serviceFields) expect(page).toContain(`plugin \`${plugin.name}\``);
    }
    // The order of the plugin list does not change the page.
    expect(renderConfigReference([...builtinPlugins].reverse())).toBe(page);
  });
});
