/**
 * Loaded into a Node server with `--import` by `bench/phases.ts`: where a request's time goes
 * inside the server, from Node's and undici's diagnostics channels, with no change to the
 * server's code. For each request it takes four moments:
 *
 *   arrived   `http.server.request.start`  the request's head was parsed
 *   sent      `undici:client:sendHeaders`  the backend request is on the wire
 *   answered  `undici:request:headers`     the backend's answer head was parsed
 *   finished  `http.server.response.finish` the answer to the client was written
 *
 * Channels carry no request identity across the two sides, so a request counts only when
 * it was alone in the server from arrival to finish: at a fixed 100 requests/s that is
 * nearly every request, under a closed-loop load almost none (use it at a low rate).
 *
 * SIGUSR2 writes the samples gathered since the last signal to `$PHASES_FILE` (as JSON,
 * through a rename, so a reader never sees half a file) and starts over.
 */
import { subscribe } from "node:diagnostics_channel";
import { renameSync, writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

export interface PhaseSample {
  /** Arrival to the backend request on the wire: the server's work before the backend, µs. */
  before: number;
  /** The backend request on the wire to its answer's head, µs. */
  backend: number;
  /** The backend's answer head to the client's answer written, µs. */
  after: number;
}

const file = process.env.PHASES_FILE;
let samples: PhaseSample[] = [];
let inFlight = 0;
let alone = false;
let arrived = 0;
let sent = 0;
let answered = 0;

subscribe("http.server.request.start", () => {
  inFlight += 1;
  alone = inFlight === 1;
  arrived = performance.now();
  sent = 0;
  answered = 0;
});
subscribe("undici:client:sendHeaders", () => {
  if (sent === 0) sent = performance.now();
});
subscribe("undici:request:headers", () => {
  answered = performance.now();
});
subscribe("http.server.response.finish", () => {
  inFlight = Math.max(0, inFlight - 1);
  if (!alone || sent === 0 || answered === 0) return;
  const finished = performance.now();
  samples.push({ before: (sent - arrived) * 1000, backend: (answered - sent) * 1000, after: (finished - answered) * 1000 });
  alone = false;
});

process.on("SIGUSR2", () => {
  if (!file) return;
  writeFileSync(`${file}.tmp`, JSON.stringify(samples));
  renameSync(`${file}.tmp`, file);
  samples = [];
});
