/** `npm run docs:config`: writes docs/config-reference.md from the schemas (see config-reference.ts). */
import { mkdirSync, writeFileSync } from "node:fs";
import { builtinPlugins } from "../plugins/index.ts";
import { renderConfigReference } from "./config-reference.ts";

const target = new URL("../docs/config-reference.md", import.meta.url);
mkdirSync(new URL(".", target), { recursive: true });
writeFileSync(target, renderConfigReference(builtinPlugins));
console.log(`wrote ${target.pathname}`);
