/**
 * The token cache's decisions, as plain data and pure functions: no Effect, no fibers, no clock.
 * `TokenService` interprets them (the lock, the `Deferred`, the fork into the layer's scope).
 *
 * A state is one of four, so that no impossible combination can be written down:
 *
 * | state | holds | meaning |
 * |---|---|---|
 * | `Empty` | | no token, nothing in flight |
 * | `Cached` | a token, its background status | a token; in its soft window one background refresh may start (`ready`), or one already gave up (`gaveUp`) |
 * | `Refreshing` | the token (if any), the refresh in flight | every caller who needs a new token awaits this one |
 * | `Throttled` | the token (if any), until when, the error | the token endpoint asked for a pause (429, or 503 with `Retry-After`) |
 *
 * Every state carries `generation`, the number of the last token obtained (0 before the first).
 */
import * as RetryPolicy from "../call/retryPolicy.js"
import type { HttpError, RateLimited, ServerError } from "../errors.js"

/** A token with the instants (epoch ms, local clock) its windows open and it expires. */
export interface Cached<T> {
  readonly token: T
  readonly generation: number
  /** From here on, a caller starts a background refresh. */
  readonly softAt: number
  /** From here on, callers wait for a new token. */
  readonly hardAt: number
  readonly expiresAt: number
}

/** Why a refresh was started; a span attribute, a metric label and a log annotation. */
export type Reason = "empty" | "soft-window" | "hard-window" | "expired"

/** The error a throttled token endpoint answered. */
export type ThrottleError = RateLimited | ServerError

/** The state of the cache; `T` is the token, `F` the handle of a refresh in flight. */
export type State<T, F, E extends ThrottleError = ThrottleError> =
  | { readonly _tag: "Empty"; readonly generation: number }
  | {
    readonly _tag: "Cached"
    readonly generation: number
    readonly cached: Cached<T>
    readonly background: "ready" | "gaveUp"
  }
  | {
    readonly _tag: "Refreshing"
    readonly generation: number
    readonly cached: Cached<T> | undefined
    readonly refresh: F
    readonly reason: Reason
  }
  | {
    readonly _tag: "Throttled"
    readonly generation: number
    readonly cached: Cached<T> | undefined
    readonly until: number
    readonly error: E
  }

/** The state of a new cache. */
export const empty: State<never, never, never> = { _tag: "Empty", generation: 0 }

/** What a caller does. */
export type Decision<T, F, E extends ThrottleError = ThrottleError> =
  /** Take this token now. */
  | { readonly _tag: "Serve"; readonly token: T }
  /** Take this token now, and start a refresh in the background. */
  | { readonly _tag: "ServeAndRefresh"; readonly token: T }
  /** Wait for the refresh in flight. */
  | { readonly _tag: "Await"; readonly refresh: F }
  /** Start a refresh and wait for it. */
  | { readonly _tag: "RefreshAndAwait"; readonly reason: Reason }
  /**
   * Fail at once: the token endpoint asked for a pause that has not passed. `error` is the
   * endpoint's; the caller fails with it, its `retryAfterMillis` counted down to `retryAfterMillis`.
   */
  | { readonly _tag: "FailFast"; readonly error: E; readonly retryAfterMillis: number }

/** The token a state holds, if any. */
export const cachedOf = <T, F, E extends ThrottleError>(state: State<T, F, E>): Cached<T> | undefined =>
  // Stryker disable next-line ConditionalExpression,StringLiteral: equivalent, an Empty state has no `cached` (undefined either way)
  state._tag === "Empty" ? undefined : state.cached

/** A fresh token, served without a lock: the fast path, and `decide`'s first rule. */
export const fresh = <T, F, E extends ThrottleError>(state: State<T, F, E>, now: number): T | undefined => {
  const cached = cachedOf(state)
  return cached !== undefined && now < cached.softAt ? cached.token : undefined
}

/**
 * What a caller does at `now`:
 * 1. before the soft window: serve the token;
 * 2. in the soft window: serve it, and start a background refresh unless one is in flight, gave
 *    up, or the endpoint is throttled;
 * 3. in the hard window, past expiry, or with no token: await the refresh in flight; else fail
 *    fast while a pause runs; else start a refresh and await it.
 * An expired pause behaves as no pause, except that a background refresh does not restart.
 */
export const decide = <T, F, E extends ThrottleError>(state: State<T, F, E>, now: number): Decision<T, F, E> => {
  const cached = cachedOf(state)
  if (cached !== undefined && now < cached.softAt) return { _tag: "Serve", token: cached.token }
  if (cached !== undefined && now < cached.hardAt) {
    // A refresh in flight or a pause: serve, and start nothing.
    // Stryker disable next-line ConditionalExpression: equivalent, only a Cached state has a `background`
    if (state._tag !== "Cached") return { _tag: "Serve", token: cached.token }
    return state.background === "ready"
      ? { _tag: "ServeAndRefresh", token: cached.token }
      : { _tag: "Serve", token: cached.token }
  }
  if (state._tag === "Refreshing") return { _tag: "Await", refresh: state.refresh }
  // Stryker disable next-line ConditionalExpression: equivalent, only a Throttled state has an `until` (now < undefined is false)
  if (state._tag === "Throttled") {
    if (now < state.until) return { _tag: "FailFast", error: state.error, retryAfterMillis: state.until - now }
  }
  const reason: Reason = cached === undefined ? "empty" : now < cached.expiresAt ? "hard-window" : "expired"
  return { _tag: "RefreshAndAwait", reason }
}

/** A refresh started: it is the one in flight, and the current token stays for whoever may still use it. */
export const started = <T, F, E extends ThrottleError>(
  state: State<T, F, E>,
  refresh: F,
  reason: Reason
): State<T, F, E> => ({
  _tag: "Refreshing",
  generation: state.generation,
  cached: cachedOf(state),
  refresh,
  reason
})

/** A refresh succeeded: the new token (numbered by `make`) is the cached one; any pause or give-up is over. */
export const succeeded = <T, F, E extends ThrottleError>(
  state: State<T, F, E>,
  make: (generation: number) => Cached<T>
): Extract<State<T, F, E>, { readonly _tag: "Cached" }> => {
  const generation = state.generation + 1
  return { _tag: "Cached", generation, cached: make(generation), background: "ready" }
}

/**
 * A refresh failed. The failure itself is never cached: only a pause the endpoint asked for (until
 * `throttle.until`), and, for a background refresh, that it gave up (no other starts before the
 * hard window).
 */
export const failed = <T, F, E extends ThrottleError>(
  state: State<T, F, E>,
  reason: Reason,
  throttle: { readonly until: number; readonly error: E } | undefined
): State<T, F, E> => {
  const cached = cachedOf(state)
  if (throttle !== undefined) return { _tag: "Throttled", generation: state.generation, cached, ...throttle }
  if (cached === undefined) return { _tag: "Empty", generation: state.generation }
  return {
    _tag: "Cached",
    generation: state.generation,
    cached,
    background: reason === "soft-window" ? "gaveUp" : "ready"
  }
}

/**
 * A token of `generation` was refused (401/419): drop it if, and only if, it is still the cached
 * one, so that a late refusal of an old token never throws away a newer one. Its background status
 * goes with it.
 */
export const invalidated = <T, F, E extends ThrottleError>(
  state: State<T, F, E>,
  generation: number
): State<T, F, E> => {
  if (cachedOf(state)?.generation !== generation) return state
  switch (state._tag) {
    case "Cached":
      return { _tag: "Empty", generation: state.generation }
    case "Refreshing":
    case "Throttled":
      return { ...state, cached: undefined }
    // Stryker disable next-line StringLiteral: unreachable, an Empty state holds no generation to match
    case "Empty":
      return state
  }
}

/** A 429, or a 503 with `Retry-After`, from the token endpoint starts a pause of that length. */
export const throttleOf = <H extends HttpError>(
  error: H,
  now: number
): { readonly until: number; readonly error: Extract<H, ThrottleError> } | undefined => {
  // Stryker disable next-line ConditionalExpression: equivalent, no other error carries a `retryAfterMillis`
  if (error._tag !== "RateLimited" && error._tag !== "ServerError") return undefined
  if (error.retryAfterMillis === undefined || (error._tag === "ServerError" && error.status !== 503)) return undefined
  return { until: now + error.retryAfterMillis, error: error as Extract<H, ThrottleError> }
}

/** The settings behind the windows, in milliseconds. */
export interface Windows {
  readonly softWindowMillis: number
  readonly hardWindowMillis: number
}

/**
 * The windows of a token sent at `sentAt` with `lifetime` (ms): soft = min(soft window, lifetime / 2),
 * hard = min(hard window, lifetime / 10), both counted back from expiry.
 */
export const windowsOf = (
  windows: Windows,
  sentAt: number,
  lifetime: number
): { readonly softAt: number; readonly hardAt: number; readonly expiresAt: number } => {
  const expiresAt = sentAt + lifetime
  return {
    expiresAt,
    softAt: expiresAt - Math.min(windows.softWindowMillis, lifetime / 2),
    hardAt: expiresAt - Math.min(windows.hardWindowMillis, lifetime / 10)
  }
}

/** What a failed background refresh does next. */
export type BackgroundStep = { readonly _tag: "Retry"; readonly delayMillis: number } | { readonly _tag: "GiveUp" }

/**
 * After attempt `retry` of a background refresh failed at `now`: retry what is worth retrying,
 * after the jittered backoff (at least any `Retry-After`), as long as the token is outside its hard
 * window; a `Retry-After` reaching past the hard window, or a failure not worth retrying, gives up.
 */
export const backgroundStep = (
  policy: RetryPolicy.RetryPolicy,
  error: HttpError,
  retry: number,
  now: number,
  hardAt: number,
  random: number
): BackgroundStep => {
  if (RetryPolicy.retryCause(error) === undefined) return { _tag: "GiveUp" }
  const retryAfter = RetryPolicy.retryAfterOf(error) ?? 0
  if (now + retryAfter >= hardAt) return { _tag: "GiveUp" }
  return {
    _tag: "Retry",
    delayMillis: Math.min(RetryPolicy.delayMillis(policy, retry, random, retryAfter), hardAt - now)
  }
}

/**
 * The throttling error a caller fails fast with: the endpoint's, its `retryAfterMillis` counted
 * down to what is left of the pause (as plain data: each line makes it its class).
 */
export const withRetryAfter = (error: ThrottleError, retryAfterMillis: number): ThrottleError => ({
  _tag: error._tag,
  operation: error.operation,
  ...(error.method === undefined ? {} : { method: error.method }),
  ...(error.url === undefined ? {} : { url: error.url }),
  status: error.status,
  retryAfterMillis
})
