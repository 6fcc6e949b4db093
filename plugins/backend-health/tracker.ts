/**
 * The health of each backend, keyed by its URL, so every service of the process that uses a
 * backend sees it sit out. A backend sits out for its Retry-After (capped) when it sends one,
 * else it is ejected after `consecutive_failures` failures in a row, for `ejection_time` x n
 * (n = its ejections without a success in between), capped, and only while the service keeps
 * more than `max_ejected_percent` of its backends. A success brings it back at once.
 */
import type { Clock } from "../../core/clock.ts";
import type { AttemptResult, BackendHealth, RetryRounds } from "../../core/proxy/backend-health.ts";
import type { BackendTarget } from "../../core/proxy/backends.ts";
import { parseRetryAfter } from "../../core/proxy/retry-after.ts";

export interface HealthSettings {
  failoverStatuses: readonly number[];
  retryAfterMaxMs: number;
  /** 0 = never eject. */
  consecutiveFailures: number;
  ejectionMs: number;
  maxEjectionMs: number;
  maxEjectedPercent: number;
}

export interface BackendState {
  /** Failures since the last success or ejection. */
  consecutiveFailures: number;
  /** Ejections since the last success: the multiplier of the next one. */
  ejectionsInRow: number;
  /** Until when it sits out (ms since the epoch); 0 = never sat out. */
  until: number;
  /** Whether the sit-out is an ejection for failures (counted in the ejected share) rather than a Retry-After. */
  ejected: boolean;
}

/** Counts since this tracker started (the process, or the last reload): they never reset on a success. */
export interface BackendCounts {
  /** Attempts recorded (each failover or retry attempt counts once). */
  requests: number;
  /** Of those, the failed ones. */
  failures: number;
  /** Sit-outs started (a Retry-After or an ejection for failures in a row). */
  ejections: number;
}

export class HealthTracker implements BackendHealth {
  private readonly states = new Map<string, BackendState>();
  private readonly totals = new Map<string, BackendCounts>();
  private readonly failover: ReadonlySet<number>;

  constructor(
    private readonly settings: HealthSettings,
    private readonly clock: Clock,
    /** Called once per sit-out that starts (Retry-After or ejection). */
    private readonly onEjection: (serviceType: string, url: string) => void,
    /** Passes after one in which every backend failed; none = one pass. */
    readonly retry?: RetryRounds,
  ) {
    this.failover = new Set(settings.failoverStatuses);
  }

  failsOver(status: number): boolean {
    return this.failover.has(status);
  }

  /** The state of a backend; undefined when nothing was ever recorded for it. */
  state(url: string): Readonly<BackendState> | undefined {
    return this.states.get(url);
  }

  /** What happened to a backend since the tracker started; zeros when nothing did. */
  counts(url: string): Readonly<BackendCounts> {
    return this.totals.get(url) ?? { requests: 0, failures: 0, ejections: 0 };
  }

  sittingOut(url: string, now = this.clock.now()): boolean {
    return (this.states.get(url)?.until ?? 0) > now;
  }

  available(_serviceType: string, targets: readonly BackendTarget[]): readonly BackendTarget[] {
    if (this.states.size === 0) return targets;
    const now = this.clock.now();
    const ready = targets.filter((target) => !this.sittingOut(target.url, now));
    if (ready.length === targets.length || targets.length === 0) return targets;
    if (ready.length > 0) return ready;
    // Every backend sits out: rather than refusing, try the one that comes back soonest.
    let soonest = targets[0];
    for (const target of targets) {
      if (this.untilOf(target.url) < this.untilOf(soonest.url)) soonest = target;
    }
    return [soonest];
  }

  waitingOutRetryAfter(targets: readonly BackendTarget[]): number | undefined {
    if (this.states.size === 0 || targets.length === 0) return undefined;
    const now = this.clock.now();
    let soonest = Infinity;
    for (const target of targets) {
      const state = this.states.get(target.url);
      if (!state || state.until <= now || state.ejected) return undefined;
      soonest = Math.min(soonest, state.until);
    }
    return soonest - now;
  }

  record(serviceType: string, targets: readonly BackendTarget[], target: BackendTarget, result: AttemptResult): void {
    const counts = this.countsFor(target.url);
    counts.requests++;
    if (!result.ok) counts.failures++;
    if (result.ok) {
      // Back at once; the next ejection starts from ejection_time again.
      if (this.states.has(target.url)) this.states.delete(target.url);
      return;
    }
    const now = this.clock.now();
    const state = this.stateFor(target.url);
    state.consecutiveFailures++;
    const retryAfterMs = parseRetryAfter(result.retryAfter ?? null, now);
    if (retryAfterMs !== undefined && retryAfterMs > 0) {
      // The backend said when to come back: honoured (capped) whatever the ejected share.
      state.until = Math.max(state.until, now + Math.min(retryAfterMs, this.settings.retryAfterMaxMs));
      state.ejected = false;
      counts.ejections++;
      this.onEjection(serviceType, target.url);
      return;
    }
    const { consecutiveFailures, ejectionMs, maxEjectionMs } = this.settings;
    if (consecutiveFailures === 0 || state.consecutiveFailures < consecutiveFailures) return;
    if (!this.mayEject(targets, target.url, now)) return;
    state.ejectionsInRow++;
    state.consecutiveFailures = 0;
    state.until = now + Math.min(ejectionMs * state.ejectionsInRow, maxEjectionMs);
    state.ejected = true;
    counts.ejections++;
    this.onEjection(serviceType, target.url);
  }

  /** Whether one more ejection keeps the service within max_ejected_percent of its backends ejected. */
  private mayEject(targets: readonly BackendTarget[], url: string, now: number): boolean {
    const urls = new Set(targets.map((target) => target.url));
    let ejected = 1;
    for (const other of urls) {
      const state = this.states.get(other);
      if (other !== url && state?.ejected && state.until > now) ejected++;
    }
    return ejected * 100 <= this.settings.maxEjectedPercent * urls.size;
  }

  private untilOf(url: string): number {
    return this.states.get(url)?.until ?? 0;
  }

  private countsFor(url: string): BackendCounts {
    let counts = this.totals.get(url);
    if (!counts) {
      counts = { requests: 0, failures: 0, ejections: 0 };
      this.totals.set(url, counts);
    }
    return counts;
  }

  private stateFor(url: string): BackendState {
    let state = this.states.get(url);
    if (!state) {
      state = { consecutiveFailures: 0, ejectionsInRow: 0, until: 0, ejected: false };
      this.states.set(url, state);
    }
    return state;
  }
}
