/**
 * Renders docs/config-reference.md from the config schemas: the core's (core/config/schema.ts)
 * and each built-in plugin's section, section fields and service fields (plugins/<name>/config.ts).
 * One table per section, followed by one per plugin that adds fields to it, then the service
 * fields by owner; a schema's `notes` (markdown, see core/config/schema-parts.ts) follow its table. `npm run docs:config` writes the file;
 * test/docs/config-reference.test.ts fails when the checked-in file differs.
 */
import { Kind, OptionalKind, type TSchema } from "@sinclair/typebox";
import { CoreConfigSchema, CoreServiceSchema } from "../core/config/schema.ts";
import type { PluginDefinition } from "../core/plugins/types.ts";

interface Row {
  path: string;
  type: string;
  default: string;
  description: string;
}

const isObject = (schema: TSchema) => schema[Kind] === "Object" && schema.properties !== undefined;
const optional = (schema: TSchema) => schema[OptionalKind] === "Optional";

function typeOf(schema: TSchema): string {
  switch (schema[Kind]) {
    case "String":
      return schema.format === "duration" ? "duration" : "string";
    case "Integer":
      return "integer";
    case "Number":
      return "number";
    case "Boolean":
      return "boolean";
    case "Union":
      return (schema.anyOf as TSchema[]).map((s) => ("const" in s ? JSON.stringify(s.const) : typeOf(s))).join(" or ");
    case "Array":
      return `list of ${typeOf(schema.items)}`;
    case "Record":
      return `map of ${typeOf(Object.values(schema.patternProperties as Record<string, TSchema>)[0])}`;
    case "Object":
      return "object";
    default:
      return "any";
  }
}

/** Bounds a schema states, appended to the description ("min 1"). */
function bounds(schema: TSchema): string {
  const parts: string[] = [];
  if (schema.minimum !== undefined) parts.push(`min ${schema.minimum}`);
  if (schema.exclusiveMinimum !== undefined) parts.push(`> ${schema.exclusiveMinimum}`);
  if (schema.maximum !== undefined) parts.push(`max ${schema.maximum}`);
  if (schema.minLength === 1) parts.push("required");
  return parts.join(", ");
}

function defaultOf(schema: TSchema): string {
  if (!("default" in schema)) return optional(schema) ? "(absent)" : "";
  return JSON.stringify(schema.default);
}

/** The rows of a schema at `path`: leaves get a row; objects, lists of objects and maps of objects are walked. */
function rowsOf(schema: TSchema, path: string): Row[] {
  if (isObject(schema)) {
    const own: Row[] = optional(schema) || (schema.additionalProperties !== false && schema.additionalProperties !== undefined)
      ? [{ path, type: optional(schema) ? "object, optional" : "object", default: defaultOf(schema), description: schema.description ?? "" }]
      : [];
    const children = Object.entries(schema.properties as Record<string, TSchema>).flatMap(([key, child]) => rowsOf(child, path ? `${path}.${key}` : key));
    return [...own, ...children];
  }
  if (schema[Kind] === "Array" && isObject(schema.items)) {
    return [{ path, type: "list of objects", default: defaultOf(schema), description: schema.description ?? "" }, ...rowsOf(schema.items, `${path}[]`)];
  }
  if (schema[Kind] === "Record") {
    const value = Object.values(schema.patternProperties as Record<string, TSchema>)[0];
    if (isObject(value) || value[Kind] === "Record") {
      return [{ path, type: "map", default: defaultOf(schema), description: schema.description ?? "" }, ...rowsOf(value, `${path}.<name>`)];
    }
  }
  const description = [schema.description ?? "", bounds(schema)].filter(Boolean).join("; ");
  return [{ path, type: typeOf(schema) + (optional(schema) ? ", optional" : ""), default: defaultOf(schema), description }];
}

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

function table(rows: Row[]): string {
  const lines = ["| Key | Type | Default | Description |", "| --- | --- | --- | --- |"];
  for (const row of rows) {
    lines.push(`| \`${cell(row.path)}\` | ${cell(row.type)} | ${row.default === "" ? "" : `\`${cell(row.default)}\``} | ${cell(row.description)} |`);
  }
  return lines.join("\n");
}

/** A table, then the schema's notes when it has any. */
function tableWithNotes(schema: TSchema, path: string): string[] {
  const notes = typeof schema.notes === "string" ? schema.notes.trim() : "";
  return notes ? [table(rowsOf(schema, path)), "", notes] : [table(rowsOf(schema, path))];
}

/** A section's table, then a table for each plugin that adds fields to it (`sectionFields`), by plugin name. */
function sectionBlock(key: string, schema: TSchema | undefined, owner: string, plugins: readonly PluginDefinition[]): string {
  const title = schema?.description ? ` (${schema.description})` : "";
  const lines = [`### \`${key}\`${title}`, "", `Owner: ${owner}.`, "", ...(schema ? tableWithNotes(schema, key) : [])];
  for (const plugin of plugins) {
    for (const fields of (plugin.sectionFields ?? []).filter((f) => f.section === key)) {
      lines.push(...(schema ? [""] : []), `Fields of plugin \`${plugin.name}\`:`, "", ...tableWithNotes(fields.schema, key));
    }
  }
  return lines.join("\n");
}

/** The whole reference page for the given built-in plugins. */
export function renderConfigReference(plugins: readonly PluginDefinition[]): string {
  const byName = [...plugins].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const withSection = byName.filter((p) => p.section).sort((a, b) => (a.section!.key < b.section!.key ? -1 : 1));
  const { services: _services, ...coreSections } = CoreConfigSchema.properties;
  const declared = new Set([...Object.keys(coreSections), ...withSection.map((p) => p.section!.key)]);
  const fieldsOnly = [...new Set(byName.flatMap((p) => (p.sectionFields ?? []).map((f) => f.section)))].filter((key) => !declared.has(key)).sort();
  const out = [
    "# Configuration reference",
    "",
    "<!-- Generated by `npm run docs:config` from core/config/schema.ts and plugins/*/config.ts; do not edit by hand. -->",
    "",
    "The config file is YAML; `${VAR}` and `${VAR:-default}` are expanded from the environment. Durations are Go-style",
    "strings (`500ms`, `1m30s`, `24h`; no `d` suffix). Every section may be left out: the defaults below apply. An unknown",
    "key anywhere is an error naming its path, and the whole file is validated at once (start and reload alike); see",
    "[Configuration](configuration.md) for which file is read, validation and hot reload, and `config.example.yaml` for a",
    "commented example.",
    "",
    "A plugin may add a top-level section of its own (for example `hello:` for `examples/hello-plugin.ts`), fields of",
    "`services[]` and fields of a section it does not own (listed under that section, by plugin); they are validated by the",
    "plugin's schema, with the same path-prefixed problem list.",
    "",
    "## Sections",
    "",
    ...Object.entries(coreSections).flatMap(([key, schema]) => [sectionBlock(key, schema as TSchema, "the core", byName), ""]),
    ...withSection.flatMap((p) => [sectionBlock(p.section!.key, p.section!.schema, `plugin \`${p.name}\``, byName), ""]),
    ...fieldsOnly.flatMap((key) => [sectionBlock(key, undefined, "none (only fields plugins add)", byName), ""]),
    "## Services",
    "",
    "`services` is a list; each entry is one model of one service type (or the whole type, for a type without model aliases).",
    "The core reads these fields:",
    "",
    ...tableWithNotes(CoreServiceSchema, "services[]"),
    "",
    "Plugins add these fields to every service:",
    "",
  ];
  for (const plugin of byName.filter((p) => p.serviceFields)) {
    out.push(`### Fields of plugin \`${plugin.name}\``, "", ...tableWithNotes(plugin.serviceFields!.schema, "services[]"), "");
  }
  return out.join("\n");
}
