/**
 * The `batches:` section: the OpenAI and Anthropic batch APIs the gateway runs itself. Off by
 * default; the limits below bound what one batch may ask of the gateway and its backends.
 */
import { type Static, Type } from "@sinclair/typebox";
import { Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";
import { spanProblem } from "./span.ts";

export const BatchesSchema = Section(
  {
    enabled: Type.Boolean({ default: false, description: "Serve /v1/files, /v1/batches and /v1/messages/batches, and run batch lines" }),
    max_file_size_mb: Type.Number({ exclusiveMinimum: 0, default: 200, description: "Largest batch input file in MiB (POST /v1/files answers 413 past it)" }),
    max_lines: Type.Integer({ minimum: 1, default: 50000, description: "Most lines (requests) one batch may hold; a longer input file fails the batch" }),
    completion_windows: Type.Array(Type.String({ minLength: 1 }), {
      default: ["24h"],
      minItems: 1,
      description: 'The completion_window values a batch may ask for ("24h", "1h", "7d"); no line starts after the window',
    }),
    concurrency: Type.Integer({ minimum: 1, default: 8, description: "Batch lines of one model in flight at once, across the whole deployment" }),
    max_attempts: Type.Integer({
      minimum: 1,
      default: 3,
      description: "Attempts per line, the first included, on a 429, a 5xx or a network error (Retry-After honoured)",
    }),
    retention: Type.String({ default: "30d", description: 'How long files (inputs, outputs) and batch records are kept ("30d", "720h")' }),
  },
  "Batch APIs (OpenAI Files and Batches, Anthropic Message Batches)",
  "See [Batches](batches.md).",
);

export type BatchesConfig = Static<typeof BatchesSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    batches: BatchesConfig;
  }
}

export const batchesSection: ConfigSection<typeof BatchesSchema> = {
  key: "batches",
  schema: BatchesSchema,
  validate: (section) => [
    ...section.completion_windows.flatMap((window, index) => spanProblem(`batches.completion_windows[${index}]`, window)),
    ...spanProblem("batches.retention", section.retention),
  ],
};
