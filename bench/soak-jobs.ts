/**
 * The async part of the soak: small-file job submissions at a fixed rate, each polled like
 * a client waiting for its result until it completed (or a deadline passed), then read once
 * more to check the first read consumed it. A job that never reaches `completed` with the
 * mock's answer as its result is lost; the soak fails on any.
 */
import { Agent, request } from "node:http";
import { MODELS, PATHS } from "./config.ts";
import { MULTIPART_TYPE, multipartBody } from "./fixtures.ts";
import { CONSUMER_HEADER } from "./load/spec.ts";

export interface JobsFigures {
  submitted: number;
  /** Submissions not answered 202 with a pending job (transport errors included). */
  submitErrors: number;
  /** Seen `completed` with the mock's answer as the result. */
  completed: number;
  /** `completed` with a wrong result, or `failed` / `cancelled`. */
  wrong: number;
  /** Still not completed at the deadline, or gone (404 / 410) before its result was read. */
  lost: number;
  polls: number;
  /** Poll answers other than 200 with a job (transport errors included), the lost ones excepted. */
  pollErrors: number;
  /** Completed jobs whose next read answered 410 `expired`: the first read consumed the record. */
  consumedAfterRead: number;
  /** Submission to the poll that saw `completed`, ms. */
  completionMs: number[];
}

const FILE_BYTES = 8 * 1024;
const POLL_EVERY_MS = 50;
const JOB_DEADLINE_MS = 60_000;

/** The relay posts the stored file to the mock, which answers with the byte count of that upload. */
function mockAnswer(result: unknown): boolean {
  const answer = result as { text?: unknown; bytes?: unknown } | undefined;
  return answer?.text === "transcribed" && typeof answer.bytes === "number" && answer.bytes > FILE_BYTES;
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface JobView {
  status?: string;
  result?: unknown;
  job_id?: unknown;
}

/**
 * node:http over the soak's own pool rather than fetch, so the connections can be closed when
 * the load ends (the soak then checks the gateway closed its side of every one).
 */
function call(agent: Agent, method: "GET" | "POST", url: string, headers: Record<string, string>, body?: Buffer): Promise<{ status: number; view: JobView }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = request({
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method,
      agent,
      headers: body ? { ...headers, "content-length": String(body.length) } : headers,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        try {
          resolve({ status: res.statusCode ?? 0, view: JSON.parse(Buffer.concat(chunks).toString()) as JobView });
        } catch (error) {
          reject(error);
        }
      });
      res.on("error", reject);
    });
    req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(body);
  });
}

export async function runJobs(base: string, rate: number, seconds: number, consumers: number): Promise<JobsFigures> {
  const figures: JobsFigures = {
    submitted: 0,
    submitErrors: 0,
    completed: 0,
    wrong: 0,
    lost: 0,
    polls: 0,
    pollErrors: 0,
    consumedAfterRead: 0,
    completionMs: [],
  };
  const body = multipartBody(MODELS.upload, FILE_BYTES);
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const read = (url: string, consumer: string) => call(agent, "GET", url, { [CONSUMER_HEADER]: consumer });

  async function one(index: number): Promise<void> {
    const consumer = `consumer-${index % consumers}`;
    const submittedAt = performance.now();
    let id: string;
    try {
      const { status, view: answer } = await call(agent, "POST", base + PATHS.jobs, { "content-type": MULTIPART_TYPE, [CONSUMER_HEADER]: consumer }, body);
      if (status !== 202 || typeof answer.job_id !== "string" || answer.status !== "pending") {
        figures.submitErrors++;
        return;
      }
      id = answer.job_id;
      figures.submitted++;
    } catch {
      figures.submitErrors++;
      return;
    }
    const url = `${base}${PATHS.jobs}/${id}`;
    const deadline = submittedAt + JOB_DEADLINE_MS;
    while (performance.now() < deadline) {
      await delay(POLL_EVERY_MS);
      figures.polls++;
      try {
        const { status, view } = await read(url, consumer);
        if (status === 404 || status === 410) break;
        if (status !== 200) {
          figures.pollErrors++;
          continue;
        }
        if (view.status === "pending" || view.status === "processing") continue;
        if (view.status !== "completed" || !mockAnswer(view.result)) {
          figures.wrong++;
          return;
        }
        figures.completed++;
        figures.completionMs.push(performance.now() - submittedAt);
        const after = await read(url, consumer);
        if (after.status === 410 && after.view.status === "expired") figures.consumedAfterRead++;
        return;
      } catch {
        figures.pollErrors++;
      }
    }
    figures.lost++;
  }

  const total = Math.max(1, Math.round(rate * seconds));
  const interval = 1000 / rate;
  const start = performance.now();
  const running: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const wait = start + i * interval - performance.now();
    if (wait > 0) await delay(wait);
    running.push(one(i));
  }
  await Promise.all(running);
  agent.destroy();
  return figures;
}
