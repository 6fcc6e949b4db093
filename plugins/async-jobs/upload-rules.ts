/**
 * A service's upload rules (docs/design.md#services and docs/design.md#constants): `accepted_exts`
 * (case-insensitive, written with or without the leading dot) and `max_file_size_mb` (MiB, default
 * 100).
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors } from "../../core/errors.ts";

const MIB = 1024 * 1024;

export function maxUploadBytes(service: ServiceConfig): number {
  return Math.floor(service.max_file_size_mb * MIB);
}

function normalizeExt(ext: string): string {
  return ext.trim().replace(/^\.+/, "").toLowerCase();
}

/** The file name's extension, lower case and without the dot ("" when it has none). */
export function extensionOf(filename: string): string {
  const dot = filename.lastIndexOf(".");
  return dot <= 0 || dot === filename.length - 1 ? "" : normalizeExt(filename.slice(dot + 1));
}

export function checkExtension(service: ServiceConfig, filename: string): void {
  const accepted = service.accepted_exts.map(normalizeExt).filter((e) => e !== "");
  if (accepted.length === 0) return;
  const ext = extensionOf(filename);
  if (accepted.includes(ext)) return;
  const shown = ext === "" ? "no extension" : `extension ".${ext}"`;
  throw errors.badRequest(
    `the file "${filename}" has ${shown}, which model "${service.model || service.type}" does not accept; accepted extensions: ${
      accepted.map((e) => `.${e}`).join(", ")
    }`,
  );
}

export function checkSize(service: ServiceConfig, size: number): void {
  const limit = maxUploadBytes(service);
  if (size <= limit) return;
  throw errors.tooLarge(
    `the file is ${size} bytes, larger than the ${service.max_file_size_mb} MB max_file_size_mb of model "${
      service.model || service.type
    }"; send a smaller file`,
  );
}
