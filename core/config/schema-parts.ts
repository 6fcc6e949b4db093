/**
 * The building blocks of config schemas, shared by the core's schema and every plugin's
 * section: Go-style durations kept as strings (converted with `durationMs` where used),
 * string maps and lists, and a section object that defaults to {} and refuses unknown keys.
 *
 * A schema may carry `notes` (markdown) in its options: what a table row cannot say (how
 * fields work together, which runtime ignores one). Validation ignores it; the generated
 * docs/config-reference.md prints it under the section's table.
 */
import { FormatRegistry, Type } from "@sinclair/typebox";
import { parseDuration } from "./duration.ts";

FormatRegistry.Set("duration", (value) => typeof value === "number" || typeof parseDuration(value) === "number");

export const Duration = (defaultValue: string, description: string) => Type.String({ format: "duration", default: defaultValue, description });

export const StringMap = (description: string) => Type.Record(Type.String(), Type.String(), { default: {}, description });

export const StringList = (description: string) => Type.Array(Type.String(), { default: [], description });

export const Section = <T extends Parameters<typeof Type.Object>[0]>(properties: T, description: string, notes?: string) =>
  Type.Object(properties, { default: {}, additionalProperties: false, description, ...(notes ? { notes } : {}) });
