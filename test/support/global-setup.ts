/** Vitest global setup: one redis-server and one s3rver for the whole run, on free ports. */
import type { TestProject } from "vitest/node";
import type {} from "vitest";
import { startRedis, startS3, type RunningServer } from "./servers.ts";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    s3Endpoint: string;
  }
}

let servers: RunningServer[] = [];

export async function setup(project: TestProject): Promise<void> {
  const [redis, s3] = await Promise.all([startRedis(), startS3()]);
  servers = [redis, s3];
  project.provide("redisUrl", redis.url);
  project.provide("s3Endpoint", s3.url);
}

export async function teardown(): Promise<void> {
  await Promise.all(servers.map((s) => s.stop()));
}
