/**
 * Writes gathered during a turn of the event loop and made at its end (core/stores/end-of-turn.ts):
 * one write per turn however often it is asked for, `written()` settling once the turn's write
 * and those before it are done, `flush()` writing at once and waiting for every write in flight.
 */
import { expect, it } from "vitest";
import { EndOfTurnWriter } from "../../../core/stores/end-of-turn.ts";

/** A write the test finishes by hand. */
function writes() {
  const pending: (() => void)[] = [];
  let started = 0;
  const write = () => {
    started++;
    return new Promise<void>((resolve) => pending.push(resolve));
  };
  return { write, pending, started: () => started };
}

/** The end of this turn of the event loop: the writer's own end-of-turn callback, queued earlier, runs first. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

it("writes at the end of the turn it was asked in, not a timer later", async () => {
  // Asked from a timer callback, so the order below does not depend on how long the test took:
  // the loop runs this turn's immediates before it comes back to its timers.
  await new Promise((resolve) => setTimeout(resolve, 0));
  const w = writes();
  const writer = new EndOfTurnWriter(w.write);
  writer.schedule();
  let timerFired = false;
  setTimeout(() => (timerFired = true), 0);
  await turn();
  // setTimeout(0) is clamped to 1 ms: a response waiting for its counts would wait that long.
  expect(w.started()).toBe(1);
  expect(timerFired).toBe(false);
  w.pending[0]();
});

it("writes once at the end of a turn; written() settles when that write and the earlier ones are done", async () => {
  const w = writes();
  const writer = new EndOfTurnWriter(w.write);
  expect(writer.written()).toBeUndefined();
  writer.schedule();
  writer.schedule();
  let first = false;
  void writer.written()!.then(() => (first = true));
  await turn();
  expect(w.started()).toBe(1);
  writer.schedule();
  let second = false;
  void writer.written()!.then(() => (second = true));
  await turn();
  expect(w.started()).toBe(2);
  // The second turn's write is done, the first's is not: neither has settled yet.
  w.pending[1]();
  await turn();
  expect([first, second]).toEqual([false, false]);
  w.pending[0]();
  await turn();
  expect([first, second]).toEqual([true, true]);
  expect(writer.written()).toBeUndefined();
});

it("flush writes at once and waits for every write in flight", async () => {
  const w = writes();
  const writer = new EndOfTurnWriter(w.write);
  writer.schedule();
  await turn();
  writer.schedule();
  let flushed = false;
  const flushing = writer.flush().then(() => (flushed = true));
  expect(w.started()).toBe(2);
  w.pending[1]();
  await turn();
  expect(flushed).toBe(false);
  w.pending[0]();
  await flushing;
  // Nothing is left scheduled: the turn's timer was cleared.
  await turn();
  expect(w.started()).toBe(2);
});

it("writes nothing when there is nothing gathered", async () => {
  const writer = new EndOfTurnWriter(() => undefined);
  writer.schedule();
  const waiting = writer.written();
  await turn();
  await expect(waiting).resolves.toBeUndefined();
  await writer.flush();
});
