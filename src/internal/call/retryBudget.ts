/**
 * How many retries a client may send, as a share of its first attempts (Finagle's retry budget,
 * gRPC's retry throttling): a token bucket, as pure functions over numbers. Each first attempt
 * adds `ratio` to the balance, time adds `perSecond` (so that a quiet client may still retry), and
 * each retry takes 1; a retry the balance cannot pay for is not sent, and the call fails at once
 * with the error that asked for it. When many calls fail together (an outage), retries stay under
 * `ratio` of the traffic instead of multiplying it by the retries each call may take.
 *
 * | when | the balance |
 * |---|---|
 * | the client starts | `cap` |
 * | time passes | +`perSecond` a second, up to `cap` |
 * | a first attempt is sent | +`ratio`, up to `cap` |
 * | a retry is asked for, with 1 or more | -1: sent |
 * | a retry is asked for, with less than 1 | unchanged: refused |
 */

/** The settings of a budget. */
export interface Settings {
  /** Retries per first attempt, in (0, 1]: 0.5 lets retries be a third of all requests. */
  readonly ratio: number
  /** Retries a second a client may send whatever its traffic. */
  readonly perSecond: number
  /** The most the balance holds: the retries a burst of failures may take at once. */
  readonly cap: number
}

/** The budget the client uses unless told otherwise. */
export const DEFAULTS: Settings = { ratio: 0.5, perSecond: 10, cap: 100 }

/**
 * The balance at `now`, `balance` having been counted at `at` (ms of a clock that only grows; with
 * one that may step back, keep `max(at, now)` as the next `at`, or time is counted twice).
 */
export const balanceAt = (settings: Settings, balance: number, at: number, now: number): number =>
  // Stryker disable next-line EqualityOperator: equivalent, no time adds nothing either way
  now <= at ? balance : Math.min(settings.cap, balance + (settings.perSecond * (now - at)) / 1000)

/** The balance after a first attempt is sent. */
export const afterFirstAttempt = (settings: Settings, balance: number): number =>
  Math.min(settings.cap, balance + settings.ratio)

/** The balance after a retry is sent, or `undefined` when the balance cannot pay for it. */
export const afterRetry = (balance: number): number | undefined => balance >= 1 ? balance - 1 : undefined
