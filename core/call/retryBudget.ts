/**
 * How many retries a client may send, as a share of its recent first attempts (Finagle's retry
 * budget, gRPC's retry throttling), as pure functions over numbers. Each first attempt deposits
 * `ratio`, each retry withdraws 1, and a retry the balance cannot pay for is not sent: the call
 * fails at once with the error that asked for it. When many calls fail together (an outage),
 * retries stay under `ratio` of the traffic instead of multiplying it by the retries each call may
 * take.
 *
 * "Recent" is a window of `windowMillis`, kept without a list of requests: the balance decays
 * towards a floor of `perSecond` a second over the window (what a quiet client may always retry)
 * with that time constant, so deposits older than a window count for little. A burst of first
 * attempts deposits in full (a thousand calls at once may retry a fifth of them as well as a
 * thousand spread over a second), and a long quiet or healthy spell leaves only the floor.
 *
 * | when | the balance |
 * |---|---|
 * | the client starts | the floor: `perSecond` x `windowMillis` / 1000 |
 * | time passes | towards the floor, e^(-elapsed / `windowMillis`) of the way left |
 * | a first attempt is sent | +`ratio` |
 * | a retry is asked for, with 1 or more | -1: sent |
 * | a retry is asked for, with less than 1 | unchanged: refused |
 */

/** The settings of a budget. */
export interface Settings {
  /** Retries per first attempt, in (0, 1]: 0.5 lets retries be a third of all requests. */
  readonly ratio: number
  /** Retries a second a client may send whatever its traffic. */
  readonly perSecond: number
  /** How far back first attempts count (the time constant of the decay), in ms. */
  readonly windowMillis: number
}

/** The budget the client uses unless told otherwise. */
export const DEFAULTS: Settings = { ratio: 0.5, perSecond: 10, windowMillis: 10_000 }

/** What the balance settles at with no traffic: the retries a quiet client may send at once. */
export const floor = (settings: Settings): number => (settings.perSecond * settings.windowMillis) / 1000

/**
 * The balance at `now`, `balance` having been counted at `at` (ms of a clock that only grows; with
 * one that may step back, keep `max(at, now)` as the next `at`, or time is counted twice).
 */
export const balanceAt = (settings: Settings, balance: number, at: number, now: number): number => {
  // Stryker disable next-line EqualityOperator: equivalent, no time changes nothing either way
  if (now <= at) return balance
  const steady = floor(settings)
  return steady + (balance - steady) * Math.exp(-(now - at) / settings.windowMillis)
}

/** The balance after a first attempt is sent. */
export const afterFirstAttempt = (settings: Settings, balance: number): number => balance + settings.ratio

/** The balance after a retry is sent, or `undefined` when the balance cannot pay for it. */
export const afterRetry = (balance: number): number | undefined => balance >= 1 ? balance - 1 : undefined
