/**
 * Media content parts (images, audio, files) as Gemini parts: a base64 `data:` URL becomes
 * `inlineData`; an `https://` or `gs://` URL becomes `fileData`, which Gemini fetches itself and
 * for which it must be told the type (taken from the URL's extension).
 */
import { isRecord, type JsonObject } from "../../core/llm/provider.ts";
import { describe, refuse } from "./request-fields.ts";

export type Part = JsonObject;

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

/** What Gemini needs to be told about a file it fetches itself: its type, from the extension. */
const TYPE_BY_EXTENSION: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
  heic: "image/heic",
  heif: "image/heif",
  pdf: "application/pdf",
};

const AUDIO_TYPES: Record<string, string> = { wav: "audio/wav", mp3: "audio/mp3" };

export function urlPart(url: string, where: string): Part {
  const data = DATA_URL.exec(url);
  if (data) return { inlineData: { mimeType: data[1], data: data[2] } };
  const remote = /^(https|gs):\/\//i.test(url);
  const extension = /\.([a-z0-9]+)$/i.exec(url.split(/[?#]/)[0])?.[1]?.toLowerCase();
  const mimeType = extension ? TYPE_BY_EXTENSION[extension] : undefined;
  if (!remote || !mimeType) {
    throw refuse(
      `${where}: Gemini takes a file as a base64 data: URL (data:image/png;base64,...) or an https:// or gs:// URL ending in ` +
        `${Object.keys(TYPE_BY_EXTENSION).map((e) => `.${e}`).join(", ")}, not ${describe(url)}`,
    );
  }
  return { fileData: { mimeType, fileUri: url } };
}

export function imagePart(part: JsonObject, where: string): Part {
  const image = part.image_url;
  const url = isRecord(image) && typeof image.url === "string" ? image.url : typeof image === "string" ? image : undefined;
  if (url === undefined) throw refuse(`${where}: an image_url part needs image_url.url`);
  return urlPart(url, where);
}

export function audioPart(part: JsonObject, where: string): Part {
  const audio = isRecord(part.input_audio) ? part.input_audio : undefined;
  const mimeType = typeof audio?.format === "string" ? AUDIO_TYPES[audio.format] : undefined;
  if (!audio || typeof audio.data !== "string" || !mimeType) {
    throw refuse(`${where}: an input_audio part needs input_audio.data (base64) and input_audio.format "wav" or "mp3"`);
  }
  return { inlineData: { mimeType, data: audio.data } };
}

export function filePart(part: JsonObject, where: string): Part {
  const file = isRecord(part.file) ? part.file : undefined;
  if (typeof file?.file_data !== "string") {
    throw refuse(`${where}: a file part needs file.file_data as a base64 data: URL (file ids belong to another API)`);
  }
  return urlPart(file.file_data, where);
}
