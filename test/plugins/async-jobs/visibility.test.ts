/**
 * Job submissions and model visibility (docs/design.md#model-visibility): the errors of `POST
 * /jobs/{type}` that list the available models name only those the caller may see, so a hidden
 * model stays unknown to callers outside its audience.
 */
import { afterEach, describe, expect, it } from "vitest";
import visibility from "../../../plugins/visibility/index.ts";
import { jobForm, type JobsRuntime, jobsRuntime } from "./harness.ts";

const open: JobsRuntime[] = [];
afterEach(async () => {
  for (const gw of open.splice(0)) await gw.close();
});

const config = `
server:
  user_type_header: X-User-Type
services:
  - type: asr
    model: whisper
    inference_url: http://127.0.0.1:9
    operations: { transcribe: ["/v1/audio/transcriptions"] }
  - type: asr
    model: whisper-secret
    inference_url: http://127.0.0.1:9
    operations: { transcribe: ["/v1/audio/transcriptions"] }
    visibility: { user_types: [premium] }
`;

async function errorOf(gw: JobsRuntime, fields: Record<string, string>, userType?: string, fileFirst = false): Promise<{ status: number; message: string }> {
  const response = await gw.request("/jobs/asr", {
    method: "POST",
    body: jobForm(fields, { name: "clip.wav", content: "audio" }, fileFirst),
    headers: userType ? { "X-User-Type": userType } : {},
  });
  const body = (await response.json()) as { error: { message: string } };
  return { status: response.status, message: body.error.message };
}

describe("job submission errors and hidden models", () => {
  it("lists only the models the caller may see, wherever the model field comes", async () => {
    const gw = await jobsRuntime(config, { plugins: [visibility] });
    open.push(gw);

    for (const fileFirst of [false, true]) {
      const outsider = await errorOf(gw, { model: "gpt-9" }, undefined, fileFirst);
      expect(outsider).toEqual({ status: 404, message: 'model "gpt-9" is not available for service type "asr"; available models: whisper' });
      expect(outsider.message).not.toContain("whisper-secret");
    }
    // No model: to an outsider the only model is the visible one, auto-selected
    // (docs/design.md#model-resolution); the audience sees two, no default, so the 400 names both.
    const chosen = await gw.request("/jobs/asr", {
      method: "POST",
      body: jobForm({}, { name: "clip.wav", content: "audio" }),
      headers: { "X-User-Type": "free" },
    });
    expect(chosen.status).toBe(202);
    expect(((await chosen.json()) as { model: string }).model).toBe("whisper");
    const ambiguous = await errorOf(gw, {}, "premium");
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.message).toBe('several models serve service type "asr" and none is the default; set "model" to one of: whisper, whisper-secret');

    // The audience sees it.
    expect((await errorOf(gw, { model: "gpt-9" }, "premium")).message).toContain("available models: whisper, whisper-secret");
  });
});
