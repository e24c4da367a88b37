/**
 * What round-trip times say of requests waiting at the service, as pure functions over numbers: the
 * concurrency limit's latency signal, beside 429, 503 and timeouts. A service that makes excess
 * requests wait in line instead of refusing them sends none of those: without this, a client's
 * limit grows to its ceiling while its requests wait (64 open at a service that serves 8). TCP
 * Vegas and Netflix's Vegas and Gradient2 limiters are the anchors: compare the round trip of now
 * with that of a request that did not wait.
 *
 * `base` is that round trip: the least seen. What the service's own slowing down does to it (a
 * service whose every answer takes longer, with nothing waiting) is told apart by an experiment, not
 * by a clock: a cut of the limit shortens a line of waiting requests in proportion, and leaves a
 * slower service as slow. Each verdict is on the fastest answer of a round (as many answers as the
 * limit lets out, at least {@link Settings.minRound}, all sent after the limit last came down): a
 * pause of the client's own (a garbage collection, a busy CPU) delays some answers, and seldom
 * every answer of two rounds in a row; requests waiting at the service delay every one, for as long
 * as they are too many.
 *
 * | the round's fastest answer took | verdict | base | the limit |
 * |---|---|---|---|
 * | at most `tolerance` x base, or base + `leastWaitMillis` | {@link Verdict.Clear} | the least of the two | as an answer says |
 * | more; the last round cut for latency, and this one's fastest went with at most 0.8 of the requests out yet kept more than half of what a line would have lost | {@link Verdict.Slower} | this round's | the cut undone |
 * | more, but the fastest answer's request went alone | {@link Verdict.Slower} | this round's | a cut undone |
 * | more, and neither of the two rounds before was (nor cut) | {@link Verdict.Once} | unchanged | unchanged |
 * | more | {@link Verdict.Queue} | unchanged | down, by the gradient `tolerance` x base / fastest, between 0.5 and `backoffRatio`; `good` the limit it came at only when the round before cut too (or in slow start) |
 *
 * In slow start the limit grows by half of itself per round trip, and a line shows first in a few
 * answers: there each answer is a round of its own, and the first that waited ends slow start.
 *
 * A `base` measured while requests waited is too long, and lets them wait longer: the service got
 * faster while they waited in line, say, and no round is fast enough to show it. So every
 * `checkEvery` rounds without a cut, and at once when `base` fell well below where it was last
 * checked, one round goes at half the limit (BBR's "ProbeRTT"): its fastest answer lowers `base` if
 * it is faster, and the limit is given back after it.
 *
 * For `refusedRounds` rounds after a 429, latency cuts nothing (see {@link afterOverload}).
 */

import * as ConcurrencyLimit from "./concurrencyLimit.js"

/** The settings of the latency signal. */
export interface Settings {
  /** How much longer than `base` a round's fastest answer may take before requests are taken to wait. */
  readonly tolerance: number
  /** The fewest answers a round has (the limit may be 1). */
  readonly minRound: number
  /** Rounds after which `base` is checked by a round at half the limit, if no cut checked it meanwhile. */
  readonly checkEvery: number
  /** Rounds after a 429 in which latency cuts nothing (see {@link afterOverload}). */
  readonly refusedRounds: number
  /**
   * How much longer than `base` (ms) a round's fastest answer may always take: on a service that
   * answers within a millisecond or two, a wait shorter than this is the timer's and the event
   * loop's noise, not a line worth a cut.
   */
  readonly leastWaitMillis: number
}

/** The settings the client uses (see scripts/load/model.ts for why). */
export const DEFAULTS: Settings = {
  tolerance: 1.5,
  minRound: 4,
  checkEvery: 100,
  refusedRounds: 100,
  leastWaitMillis: 1
}

/** What a round says. */
export const Verdict = {
  /** No request waited. */
  Clear: 0,
  /** Requests waited at the service: the limit comes down. */
  Queue: 1,
  /** The service itself got slower, not the line longer: the last cut is undone, and `base` is this round's. */
  Slower: 2,
  /**
   * Long, but neither of the two rounds before was: nothing yet. A line lasts; a pause of the
   * client's own (a garbage collection, a CPU taken by other processes) seldom outlasts a round.
   */
  Once: 3
} as const

export type Verdict = typeof Verdict[keyof typeof Verdict]

/**
 * The most requests out, as a share of those out when the cut round's fastest answer went, with
 * which a round after the cut can tell a line from a slower service: with as many or nearly, the
 * difference is within a round's noise.
 */
export const LEVERAGE = 0.8

/** The least a cut for latency takes the limit to: Gradient2's floor. */
export const LEAST_CUT = 0.5

/** A round's fastest answer: how long it took (ms), and how many requests were out when it went (itself included). */
export interface Fastest {
  readonly millis: number
  readonly inFlight: number
}

/**
 * The verdict of a round whose fastest answer is `fastest`, against `base`; `cut` is the fastest
 * answer of the round before, when that round cut the limit for latency. A line's requests take
 * in proportion to how many were out when each went; a slower service's, as long whatever that
 * was. So the cut is judged by how this round's fastest answer compares with its own: `Slower`
 * when it kept more than half of what a line would have lost, going out with at most
 * {@link LEVERAGE} of the requests out; with more, the cut tells nothing, and the round is judged as
 * any.
 * `recentlyOver`: whether either of the two rounds before took longer than the tolerance allows.
 */
export const verdict = (
  settings: Settings,
  base: number,
  fastest: Fastest,
  cut: Fastest | undefined,
  recentlyOver: boolean
): Verdict => {
  if (fastest.millis <= settings.tolerance * base || fastest.millis - base <= settings.leastWaitMillis) {
    return Verdict.Clear
  }
  // A request that went alone waited behind none of this client's: the service, or the client, is slower.
  if (fastest.inFlight <= 1) return Verdict.Slower
  if (cut !== undefined && fastest.inFlight <= cut.inFlight * LEVERAGE) {
    const fewer = fastest.inFlight / cut.inFlight
    if (fastest.millis >= cut.millis * (1 + fewer) / 2) return Verdict.Slower
  }
  return cut !== undefined || recentlyOver ? Verdict.Queue : Verdict.Once
}

/** How much of the limit a cut for a round whose fastest answer took `fastest` ms keeps: the gradient, within [0.5, `backoffRatio`]. */
export const cutRatio = (settings: Settings, base: number, fastest: number, backoffRatio: number): number =>
  Math.max(LEAST_CUT, Math.min(backoffRatio, (settings.tolerance * base) / fastest))

/** The base after a round's verdict. */
export const baseAfter = (verdictOfRound: Verdict, base: number, fastest: Fastest): number =>
  verdictOfRound === Verdict.Slower ? fastest.millis : Math.min(base, fastest.millis)

/** How many answers make a round under a limit of `permits`. */
export const roundSize = (settings: Settings, permits: number): number => Math.max(settings.minRound, permits)

/**
 * Whether a round at half the limit should check `base`: `rounds` rounds after the last cut or
 * check, or at once when `base` fell below `checked` (what it was at the last check) x 2 / (1 +
 * `tolerance`): the service got faster, and while requests wait in line it looks faster by less
 * than it is.
 */
export const checkDue = (settings: Settings, rounds: number, checked: number, base: number): boolean =>
  rounds >= settings.checkEvery || base * (1 + settings.tolerance) / 2 < checked

/** The share of the limit a round that checks `base` goes at. */
export const CHECK_RATIO = 0.5

/** What the latency signal knows between rounds. */
export interface State {
  /** The round trip of a request that did not wait (ms); `Infinity` before the first answer. */
  readonly base: number
  /** `base` when it was last checked (or set by a slower service). */
  readonly checked: number
  /** Rounds since the last cut or check. */
  readonly rounds: number
  /** Whether each of the last two rounds was over the tolerance (a bit each, the last lowest). */
  readonly recentOver: number
  /** The last round's cut, to be judged by this one: its fastest answer and the limit before it. */
  readonly cut: (Fastest & { readonly before: ConcurrencyLimit.State }) | undefined
  /** A check under way: the limit it gives back. */
  readonly checking: ConcurrencyLimit.State | undefined
  /** Rounds left in which latency cuts nothing: the service answered 429 that long ago. */
  readonly refusing: number
}

export const initial: State = {
  base: Number.POSITIVE_INFINITY,
  checked: Number.POSITIVE_INFINITY,
  rounds: 0,
  recentOver: 0,
  cut: undefined,
  checking: undefined,
  refusing: 0
}

/**
 * The state after an overload the limit was told of (a 429, a 503, an attempt timed out): when it
 * brought the limit down, a cut or check under way is muddled, and dropped; a 429 says the service
 * refuses what it cannot take rather than make it wait, and latency cuts nothing for
 * `refusedRounds` rounds (the 429s find its capacity; the client's own delays, on a busy machine,
 * would only cut the limit for nothing).
 */
export const afterOverload = (settings: Settings, state: State, decreased: boolean, throttled: boolean): State =>
  !decreased && !throttled ? state : {
    ...state,
    cut: decreased ? undefined : state.cut,
    checking: decreased ? undefined : state.checking,
    refusing: throttled ? settings.refusedRounds : state.refusing
  }

/**
 * The end of a round whose fastest answer is `fastest`, under `limit` (its settings `limits`), the
 * client having sent `sent` requests: the latency signal's state after it, and the limit's.
 */
export const afterRound = (
  settings: Settings,
  limits: ConcurrencyLimit.Settings,
  state: State,
  limit: ConcurrencyLimit.State,
  fastest: Fastest,
  sent: number
): { readonly state: State; readonly limit: ConcurrencyLimit.State } => {
  if (state.checking !== undefined) {
    // A round at half the limit: what it says of `base` only; the limit is given back.
    const base = Math.min(state.base, fastest.millis)
    return {
      state: { ...state, base, checked: base, rounds: 0, cut: undefined, checking: undefined },
      limit: ConcurrencyLimit.undone(limit, state.checking)
    }
  }
  if (state.refusing > 0) {
    // The 429s keep the limit: `base` is kept up to date, nothing more.
    return { state: { ...state, base: Math.min(state.base, fastest.millis), refusing: state.refusing - 1 }, limit }
  }
  // In slow start the first answer that waited is enough: the limit grows by half of itself a round
  // trip, and by the second such answer it had passed twice a service's capacity (17 open at a
  // service of 8 on loopback). A pause of the client's own ends slow start early, at little cost:
  // the limit then grows by one a round trip.
  const slowStart = limit.good === Number.POSITIVE_INFINITY
  const said = verdict(settings, state.base, fastest, state.cut, slowStart || state.recentOver !== 0)
  const next: State = {
    ...state,
    base: baseAfter(said, state.base, fastest),
    recentOver: ((state.recentOver << 1) | (said === Verdict.Clear ? 0 : 1)) & 0b11,
    cut: undefined
  }
  switch (said) {
    case Verdict.Slower:
      return {
        state: { ...next, checked: next.base },
        limit: state.cut === undefined ? limit : ConcurrencyLimit.undone(limit, state.cut.before)
      }
    case Verdict.Once:
      return { state: next, limit }
    case Verdict.Queue: {
      const ratio = cutRatio(settings, state.base, fastest.millis, limits.backoffRatio)
      const cut = ConcurrencyLimit.afterOverload(limits, limit, sent, sent + 1, ratio)
      // Where the limit returns to (`good`) moves only on a line confirmed by a second round in a
      // row, or to end slow start: a round the client's own delays made long must not lower it.
      const confirmed = state.cut !== undefined || limit.good === Number.POSITIVE_INFINITY
      return {
        state: { ...next, rounds: 0, cut: { ...fastest, before: limit } },
        limit: confirmed ? cut : { ...cut, good: limit.good }
      }
    }
    case Verdict.Clear: {
      const rounds = state.rounds + 1
      if (limit.good === Number.POSITIVE_INFINITY || !checkDue(settings, rounds, state.checked, next.base)) {
        return { state: { ...next, rounds }, limit }
      }
      return {
        state: { ...next, rounds: 0, checking: limit },
        limit: {
          limit: Math.max(limits.min, limit.limit * CHECK_RATIO),
          good: limit.good,
          decreasedAt: sent + 1
        }
      }
    }
  }
}
