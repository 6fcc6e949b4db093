/**
 * A bounded wait for every Redis reply (`redis.command_timeout`), and a fast refusal while
 * Redis is known not to answer.
 *
 * A Redis that is stopped (SIGSTOP, a long fork stall) or behind a network black hole
 * keeps the TCP connection open: commands are written and their replies never come, so
 * without a deadline every caller waits for the whole outage. node-redis's own `timeout`
 * option only covers a command not yet written to the socket, so the wait for the reply is
 * bounded here.
 *
 * A command given up on stays in node-redis's reply queue: Redis answers in order, so its
 * late reply is consumed by that abandoned entry and never handed to a later command.
 * While such a command is still unanswered, Redis has not answered anything sent since
 * either; new commands are refused at once instead of each waiting the full bound (a
 * frozen Redis would otherwise cost every request `command_timeout`, and pile up commands
 * to run late). The refusal ends as soon as the late replies arrive or the connection is
 * replaced (node-redis then fails every pending command).
 */

import { EXPIRED, settleWithin } from "../../core/deadline.ts";

/** A command that got no reply in time, or was not sent because an earlier one got none. */
export class RedisNoReplyError extends Error {
  override readonly name = "RedisNoReplyError";
}

export class ReplyDeadline {
  /** Commands given up on whose reply (or failure) has not come yet. */
  private unanswered = 0;
  /** Bumped by `reset`, so replies to commands of a dropped connection do not count down twice. */
  private epoch = 0;

  constructor(
    private readonly timeoutMs: number,
    /** "Redis at host:port", for messages. */
    private readonly where: string,
  ) {}

  /** True while a command given up on is still unanswered (Redis is not answering). */
  get stalled(): boolean {
    return this.unanswered > 0;
  }

  /**
   * Runs `send` and waits at most the bound for its reply; rejects at once, without
   * calling `send`, while an earlier command is still unanswered.
   */
  async wait<T>(command: string, send: () => Promise<T>): Promise<T> {
    if (this.stalled) {
      throw new RedisNoReplyError(
        `${this.where} is not answering (a command has had no reply for over ${this.timeoutMs} ms, redis.command_timeout): ${command} not sent`,
      );
    }
    const reply = send();
    const first = await settleWithin(reply, this.timeoutMs);
    if (first !== EXPIRED) return first;
    this.abandon(reply);
    throw new RedisNoReplyError(`${this.where} did not answer ${command} within ${this.timeoutMs} ms (redis.command_timeout)`);
  }

  /** The connection was (re)established: nothing is pending on it any more. */
  reset(): void {
    this.unanswered = 0;
    this.epoch++;
  }

  private abandon(reply: Promise<unknown>): void {
    this.unanswered++;
    const epoch = this.epoch;
    const settled = () => {
      if (epoch === this.epoch) this.unanswered--;
    };
    reply.then(settled, settled);
  }
}
