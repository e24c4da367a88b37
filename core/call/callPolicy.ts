/**
 * What a call does after each attempt, as pure functions over an immutable progress value: no
 * Effect, no fibers, no clock. `authorizedPost` interprets the steps (the token, the turn, the
 * send, the sleep). The deadline is decided here and nowhere else.
 *
 * | attempt ended in | step |
 * |---|---|
 * | a 2xx whose body reads | `Done` |
 * | 401 or 419, first time in this call | `RefreshToken`: drop the token used, take a fresh one, send again at once |
 * | a failure worth retrying, retries left, the wait ends before the deadline, and the call may be resent | `Retry` after the backoff (at least any `Retry-After`) |
 * | anything else | `Fail` with the attempt's error |
 *
 * A call that is not `resendable` (authenticate: a pass code may be single-use) is retried only
 * when its request surely never reached the server (`sent: false`).
 */
import type { ClinicalError } from "../errors.js"
import * as RetryPolicy from "./retryPolicy.js"

/** The statuses that mean "this token is no good": refresh once and retry once. */
export const isTokenRejected = (status: number): boolean => status === 401 || status === 419

/** A call's progress across its attempts. */
export interface Progress {
  /** Local time (epoch ms) by which the whole call must be over. */
  readonly deadlineAt: number
  /** Attempts begun. */
  readonly attempts: number
  /** Retries taken (a token refresh is not one). */
  readonly retried: number
  /** Whether the one token refresh of this call was used. */
  readonly tokenRefreshed: boolean
}

/** The progress of a call that begins at `now` with `deadlineMillis` to run. */
export const begin = (now: number, deadlineMillis: number): Progress => ({
  deadlineAt: now + deadlineMillis,
  attempts: 0,
  retried: 0,
  tokenRefreshed: false
})

/** One more attempt begun. */
export const attempted = (progress: Progress): Progress => ({ ...progress, attempts: progress.attempts + 1 })

/** How an attempt ended. */
export type Outcome<E extends ClinicalError = ClinicalError> =
  /** A response arrived: its status, and its body read into JSON or the error it stands for. */
  | {
    readonly _tag: "Answered"
    readonly status: number
    readonly read: { readonly _tag: "Right"; readonly right: unknown } | {
      readonly _tag: "Left"
      readonly left: E
    }
  }
  /** No usable response. `sent` is false when the request surely never reached the server. */
  | { readonly _tag: "Failed"; readonly error: E; readonly sent: boolean }

/** What the call does next. */
export type Step<E extends ClinicalError = ClinicalError> =
  | { readonly _tag: "Done"; readonly progress: Progress; readonly status: number; readonly json: unknown }
  | { readonly _tag: "RefreshToken"; readonly progress: Progress }
  /** `error`: the attempt's, which the call fails with if the retry is not sent after all (the budget is spent). */
  | {
    readonly _tag: "Retry"
    readonly progress: Progress
    readonly delayMillis: number
    readonly cause: string
    readonly error: E
  }
  | { readonly _tag: "Fail"; readonly progress: Progress; readonly error: E }

/** The rules a call runs under. */
export interface Policy extends RetryPolicy.RetryPolicy {
  /** Whether the request may be sent again once it may have reached the server. */
  readonly resendable: boolean
}

const retryOrFail = <E extends ClinicalError>(
  policy: Policy,
  progress: Progress,
  error: E,
  sent: boolean,
  now: number,
  random: number
): Step<E> => {
  const cause = RetryPolicy.retryCause(error)
  if (
    cause === undefined || progress.retried >= policy.maxRetries || (sent && !policy.resendable) ||
    (error._tag === "RateLimited" && !policy.retryRateLimited)
  ) {
    return { _tag: "Fail", progress, error }
  }
  const delayMillis = RetryPolicy.delayMillis(policy, progress.retried + 1, random, RetryPolicy.retryAfterOf(error))
  // A wait that would end at or after the deadline is not started: the caller gets the error now,
  // with its Retry-After, and can schedule the work itself.
  if (now + delayMillis >= progress.deadlineAt) return { _tag: "Fail", progress, error }
  return { _tag: "Retry", progress: { ...progress, retried: progress.retried + 1 }, delayMillis, cause, error }
}

/** What the call does after an attempt ended in `outcome` at `now` (`random` in [0, 1) draws the jitter). */
export const next = <E extends ClinicalError>(
  policy: Policy,
  progress: Progress,
  outcome: Outcome<E>,
  now: number,
  random: number
): Step<E> => {
  if (outcome._tag === "Failed") return retryOrFail(policy, progress, outcome.error, outcome.sent, now, random)
  if (isTokenRejected(outcome.status) && !progress.tokenRefreshed) {
    return { _tag: "RefreshToken", progress: { ...progress, tokenRefreshed: true } }
  }
  return outcome.read._tag === "Right"
    ? { _tag: "Done", progress, status: outcome.status, json: outcome.read.right }
    : retryOrFail(policy, progress, outcome.read.left, true, now, random)
}

/** How long the next attempt may take: the attempt timeout, cut to what is left of the deadline. */
export type Budget =
  | { readonly _tag: "Passed" }
  | {
    readonly _tag: "Left"
    readonly remainingMillis: number
    readonly timeoutMillis: number
    readonly byDeadline: boolean
  }

/** The time an attempt beginning at `now` has: none once the deadline passed. */
export const budget = (progress: Progress, now: number, requestTimeoutMillis: number): Budget => {
  const remainingMillis = progress.deadlineAt - now
  if (remainingMillis <= 0) return { _tag: "Passed" }
  const byDeadline = remainingMillis < requestTimeoutMillis
  return {
    _tag: "Left",
    remainingMillis,
    timeoutMillis: byDeadline ? remainingMillis : requestTimeoutMillis,
    byDeadline
  }
}
