/**
 * The bearer token, cached and kept fresh.
 *
 * - One token request in flight at a time, shared by every waiter (no stampede on a cold cache).
 * - Soft window: the next caller starts a refresh in the background and still gets the current
 *   token at once. Hard window (or no token): callers wait for the new one.
 * - The refresh runs in a fiber owned by this layer's scope, so a caller that is interrupted or
 *   times out never cancels the refresh that others wait on.
 * - A failed refresh is never cached: the next caller tries again. A failed background refresh is
 *   retried with jittered backoff while the current token is outside its hard window; only at the
 *   hard window does a caller see an error.
 * - After the token endpoint answers 429 or 503 with `Retry-After`, token requests fail fast with
 *   that error until the time has passed, instead of every waiting caller hitting the endpoint.
 * - Every token has a generation number; `invalidate` drops a token only if it is still the cached
 *   one, so a late 401 for an old token cannot throw away a newer one.
 * - All time is read from Effect's `Clock`, so `TestClock` drives all of it.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as SynchronizedRef from "effect/SynchronizedRef"
import { ClinicalConfig } from "./ClinicalConfig.js"
import { type HttpError, InvalidRequest, RateLimited, ServerError, TransportError } from "./ClinicalError.js"
import { HttpTransport } from "./HttpTransport.js"
import * as RetryPolicy from "./internal/retryPolicy.js"
import * as Telemetry from "./internal/telemetry.js"
import { type IssuedToken, requestToken, tokenUrl } from "./internal/tokenRequest.js"

/** A token ready to use. All times are epoch milliseconds on the local clock. */
export interface AccessToken {
  /** The bearer token itself. */
  readonly token: Redacted.Redacted<string>
  /** The `Authorization` header value, `Bearer <token>`. */
  readonly authorization: Redacted.Redacted<string>
  /** 1 for the first token this service obtained, then 2, 3, ... */
  readonly generation: number
  /** When the request for this token was sent (its lifetime is counted from here). */
  readonly issuedAt: number
  /** When the token expires: `issuedAt` plus the lifetime the server gave. */
  readonly expiresAt: number
  /** The lifetime used: the one the server gave (`TOKEN_EXPIRES - Date`), at most `maxTokenLifetime`. */
  readonly lifetimeMillis: number
  /** The lifetime the server gave; larger than `lifetimeMillis` when the cap cut it. */
  readonly serverLifetimeMillis: number
  /** The server's clock minus ours, from its `Date` header; `undefined` when it sent none. */
  readonly serverClockSkewMillis: number | undefined
}

/** The token cache. */
export interface Service {
  /** A token that is valid now; obtains or refreshes one when needed. */
  readonly get: Effect.Effect<AccessToken, HttpError>
  /**
   * Like `get`, but waits at most `maxWait` for a token being fetched; then fails with a
   * `TransportError` (`Deadline`). A fresh token is returned at once, with no timer. A `maxWait`
   * that is not a duration is an `InvalidRequest`.
   */
  readonly getWithin: (maxWait: Duration.DurationInput) => Effect.Effect<AccessToken, HttpError | InvalidRequest>
  /** Drops `token` from the cache if, and only if, it is still the cached one (anything else: nothing happens). */
  readonly invalidate: (token: AccessToken) => Effect.Effect<void>
}

/** The tag of the token cache. */
export class TokenService extends Context.Tag("effect-clinical/TokenService")<TokenService, Service>() {}

interface Cached {
  readonly token: AccessToken
  /** From here on, a caller starts a background refresh. */
  readonly softAt: number
  /** From here on, callers wait for a new token. */
  readonly hardAt: number
}

/** The token endpoint asked for a pause (429 or 503 with `Retry-After`): no token request until `until`. */
interface Throttle {
  readonly until: number
  readonly error: RateLimited | ServerError
}

interface State {
  readonly cached: Cached | undefined
  /** The refresh in flight, if any: every waiter awaits this one. */
  readonly refreshing: Deferred.Deferred<AccessToken, HttpError> | undefined
  readonly generation: number
  readonly throttle: Throttle | undefined
  /** The background refresh for the cached token gave up: wait for the hard window. */
  readonly backgroundGaveUp: boolean
}

/** What a caller does next: take this effect's outcome, or wait for the refresh in flight. */
type Next =
  | { readonly _tag: "Now"; readonly outcome: Effect.Effect<AccessToken, HttpError> }
  | { readonly _tag: "Wait"; readonly deferred: Deferred.Deferred<AccessToken, HttpError> }

/** Why a refresh was started; a span attribute, a metric label and a log annotation. */
type RefreshReason = "empty" | "soft-window" | "hard-window" | "expired"

/** The error to fail fast with while the token endpoint's `Retry-After` runs. */
const throttledError = (throttle: Throttle, now: number): RateLimited | ServerError => {
  const { error } = throttle
  const fields = {
    operation: error.operation,
    method: error.method,
    url: error.url,
    status: error.status,
    retryAfterMillis: throttle.until - now
  }
  return error._tag === "RateLimited" ? new RateLimited(fields) : new ServerError(fields)
}

/** A 429 or 503 from the token endpoint with `Retry-After` starts a pause. */
const throttleOf = (error: HttpError, now: number): Throttle | undefined =>
  (error._tag === "RateLimited" || (error._tag === "ServerError" && error.status === 503)) &&
    error.retryAfterMillis !== undefined
    ? { until: now + error.retryAfterMillis, error }
    : undefined

/** Builds the token cache. Owns fibers, so it needs a `Scope`: use {@link layer}. */
export const make: Effect.Effect<Service, never, ClinicalConfig | HttpTransport | Scope.Scope> = Effect.gen(
  function*() {
    const config = yield* ClinicalConfig
    const transport = yield* HttpTransport
    const scope = yield* Effect.scope
    const state = yield* SynchronizedRef.make<State>({
      cached: undefined,
      refreshing: undefined,
      generation: 0,
      throttle: undefined,
      backgroundGaveUp: false
    })
    const softWindow = Duration.toMillis(config.softRefreshWindow)
    const hardWindow = Duration.toMillis(config.hardRefreshWindow)
    const policy = RetryPolicy.fromConfig(config)

    const toCached = (issued: IssuedToken, generation: number): Cached => {
      const lifetime = issued.lifetimeMillis
      const expiresAt = issued.sentAt + lifetime
      const token = Redacted.value(issued.token)
      return {
        token: {
          token: issued.token,
          authorization: Redacted.make(`Bearer ${token}`),
          generation,
          issuedAt: issued.sentAt,
          expiresAt,
          lifetimeMillis: lifetime,
          serverLifetimeMillis: issued.serverLifetimeMillis,
          serverClockSkewMillis: issued.serverClockSkewMillis
        },
        softAt: expiresAt - Math.min(softWindow, lifetime / 2),
        hardAt: expiresAt - Math.min(hardWindow, lifetime / 10)
      }
    }

    /**
     * A background refresh retries what is worth retrying, with jittered backoff, for as long as
     * the current token is outside its hard window; callers meanwhile keep the current token. A
     * `Retry-After` that reaches past the hard window ends it (the pause is remembered).
     */
    const requestUntil = (hardAt: number, retry = 1): Effect.Effect<IssuedToken, HttpError> =>
      Effect.catchAll(requestToken(config, transport), (error) =>
        Effect.gen(function*() {
          if (RetryPolicy.retryCause(error) === undefined) return yield* Effect.fail(error)
          const now = yield* Clock.currentTimeMillis
          const retryAfter = RetryPolicy.retryAfterOf(error) ?? 0
          if (now + retryAfter >= hardAt) return yield* Effect.fail(error)
          const delay = Math.min(RetryPolicy.delayMillis(policy, retry, yield* Random.next, retryAfter), hardAt - now)
          yield* Effect.logDebug("background token refresh failed; retrying").pipe(
            Effect.annotateLogs({ error: error._tag, delayMillis: Math.round(delay) })
          )
          yield* Effect.sleep(Duration.millis(delay))
          return yield* requestUntil(hardAt, retry + 1)
        }))

    // Stores the outcome and hands it to every waiter: a token becomes the cached one; a failure
    // is never stored, except as a pause when the endpoint asked for one.
    const settle = (
      exit: Exit.Exit<IssuedToken, HttpError>,
      deferred: Deferred.Deferred<AccessToken, HttpError>,
      reason: RefreshReason,
      now: number
    ) =>
      SynchronizedRef.modify(state, (current): [Exit.Exit<AccessToken, HttpError>, State] => {
        // Only the refresh the state records may clear it (defensive: there is never another).
        const refreshing = current.refreshing === deferred ? undefined : current.refreshing
        if (Exit.isSuccess(exit)) {
          const generation = current.generation + 1
          const cached = toCached(exit.value, generation)
          return [
            Exit.succeed(cached.token),
            { cached, refreshing, generation, throttle: undefined, backgroundGaveUp: false }
          ]
        }
        const error = Cause.failureOption(exit.cause)
        const throttle = Option.isSome(error) ? throttleOf(error.value, now) : undefined
        return [Exit.failCause(exit.cause), {
          ...current,
          refreshing,
          throttle: throttle ?? current.throttle,
          backgroundGaveUp: current.backgroundGaveUp || reason === "soft-window"
        }]
      })

    // An absurd lifetime is cut to maxTokenLifetime; the operator hears of it once, not on every refresh.
    let clampReported = false
    const reportClamp = (token: AccessToken) => {
      if (clampReported || token.lifetimeMillis >= token.serverLifetimeMillis) return Effect.void
      clampReported = true
      return Effect.logWarning("the token endpoint gave a lifetime longer than maxTokenLifetime; using the cap").pipe(
        Effect.annotateLogs({
          serverLifetimeSeconds: Math.round(token.serverLifetimeMillis / 1000),
          lifetimeSeconds: Math.round(token.lifetimeMillis / 1000)
        })
      )
    }

    const report = (outcome: Exit.Exit<AccessToken, HttpError>) =>
      Exit.match(outcome, {
        onFailure: (cause) => {
          const error = Option.match(Cause.failureOption(cause), {
            onNone: () => (Cause.isInterruptedOnly(cause) ? "interrupted" : "defect"),
            onSome: (error) => error._tag
          })
          return Effect.zipRight(
            Effect.annotateCurrentSpan("clinical.error", error),
            Effect.logWarning("token refresh failed").pipe(Effect.annotateLogs({ error }))
          )
        },
        onSuccess: (token) => {
          const facts = {
            generation: token.generation,
            lifetimeSeconds: Math.round(token.lifetimeMillis / 1000),
            serverClockSkewMillis: token.serverClockSkewMillis ?? "unknown"
          }
          return Effect.all([
            Effect.annotateCurrentSpan({
              "clinical.token.generation": facts.generation,
              "clinical.token.lifetime_seconds": facts.lifetimeSeconds,
              "clinical.token.server_lifetime_seconds": Math.round(token.serverLifetimeMillis / 1000),
              "clinical.server_clock_skew_ms": facts.serverClockSkewMillis
            }),
            Metric.set(Telemetry.tokenLifetime, facts.lifetimeSeconds),
            token.serverClockSkewMillis === undefined
              ? Effect.void
              : Metric.set(Telemetry.serverClockSkew, token.serverClockSkewMillis),
            reportClamp(token),
            Effect.logDebug("token issued").pipe(Effect.annotateLogs(facts))
          ], { discard: true })
        }
      })

    // Runs in the layer's scope. Whatever happens to it (success, failure, interruption when the
    // layer closes), the state forgets the refresh and every waiter gets the outcome.
    const refresh = (deferred: Deferred.Deferred<AccessToken, HttpError>, reason: RefreshReason, hardAt: number) =>
      Metric.increment(Metric.tagged(Telemetry.tokenRefreshes, "reason", reason)).pipe(
        Effect.zipRight(reason === "soft-window" ? requestUntil(hardAt) : requestToken(config, transport)),
        Effect.onExit((exit) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => settle(exit, deferred, reason, now)).pipe(
            Effect.tap(report),
            Effect.flatMap((outcome) => Deferred.done(deferred, outcome))
          )
        ),
        Effect.withSpan("TokenService.refresh", { attributes: { "clinical.refresh.reason": reason } }),
        Effect.annotateLogs({ refreshReason: reason }),
        // The outcome went to the waiters (and the log) above; the fiber itself ends quietly.
        Effect.ignore,
        // Forked from inside the uninterruptible `decide`: the refresh itself must stay
        // interruptible, or its timeouts could not fire and the layer could not close.
        Effect.interruptible,
        Effect.forkIn(scope)
      )

    const startRefresh = (current: State, reason: RefreshReason) =>
      Effect.gen(function*() {
        const deferred = yield* Deferred.make<AccessToken, HttpError>()
        yield* refresh(deferred, reason, current.cached?.hardAt ?? 0)
        return [deferred, { ...current, refreshing: deferred }] as const
      })

    const ready = (outcome: Effect.Effect<AccessToken, HttpError>): Next => ({ _tag: "Now", outcome })
    const wait = (deferred: Deferred.Deferred<AccessToken, HttpError>): Next => ({ _tag: "Wait", deferred })
    const keep = (token: AccessToken, current: State) =>
      Effect.succeed([ready(Effect.succeed(token)), current] as const)

    // The slow path, serialised by the SynchronizedRef: decides, atomically, whether to start a
    // refresh, and returns what this caller should do (take the current token, wait, or fail fast).
    // Uninterruptible, so that a caller interrupted here cannot fork a refresh the state never
    // records (a second token request); the wait it returns runs outside, interruptibly.
    const decide = (now: number) =>
      Effect.uninterruptible(SynchronizedRef.modifyEffect(
        state,
        (current): Effect.Effect<readonly [Next, State]> => {
          const { cached, throttle } = current
          const throttled = throttle !== undefined && now < throttle.until
          if (cached !== undefined && now < cached.softAt) return keep(cached.token, current)
          if (cached !== undefined && now < cached.hardAt) {
            if (current.refreshing !== undefined || current.backgroundGaveUp || throttled) {
              return keep(cached.token, current)
            }
            return Effect.map(startRefresh(current, "soft-window"), ([, next]) =>
              [ready(Effect.succeed(cached.token)), next] as const)
          }
          if (current.refreshing !== undefined) {
            return Effect.succeed([wait(current.refreshing), current])
          }
          if (throttled) {
            return Effect.succeed([
              ready(Effect.zipRight(
                Metric.increment(Telemetry.throttledFastFails),
                Effect.fail(throttledError(throttle, now))
              )),
              current
            ])
          }
          const reason: RefreshReason = cached === undefined
            ? "empty"
            : now < cached.token.expiresAt
            ? "hard-window"
            : "expired"
          return Effect.map(
            startRefresh(current, reason),
            ([deferred, next]) =>
              [wait(deferred), next] as const
          )
        }
      ))

    const url = tokenUrl(config)
    const follow = (maxWaitMillis: number | undefined) => (next: Next): Effect.Effect<AccessToken, HttpError> => {
      if (next._tag === "Now") return next.outcome
      const waiting = Deferred.await(next.deferred)
      return maxWaitMillis === undefined ? waiting : Effect.timeoutFail(waiting, {
        duration: Duration.millis(maxWaitMillis),
        onTimeout: () =>
          new TransportError({
            operation: "token",
            reason: "Deadline",
            method: "POST",
            url,
            detail: `no token within ${maxWaitMillis} ms`
          })
      })
    }

    const acquire = (maxWaitMillis: number | undefined): Effect.Effect<AccessToken, HttpError> =>
      Effect.flatMap(SynchronizedRef.get(state), (current) =>
        Effect.clockWith((clock) => {
          const now = clock.unsafeCurrentTimeMillis()
          const cached = current.cached
          // Fast path: a fresh token, no lock taken, no timer.
          if (cached !== undefined && now < cached.softAt) return Effect.succeed(cached.token)
          return Effect.flatMap(decide(now), follow(maxWaitMillis))
        }))

    const invalidate = (token: AccessToken): Effect.Effect<void> =>
      SynchronizedRef.update(
        state,
        (current) =>
          current.cached !== undefined && typeof token === "object" && token !== null &&
            current.cached.token.generation === token.generation
            ? { ...current, cached: undefined }
            : current
      )

    // The call path passes a plain number of milliseconds: no Duration is decoded on it.
    const getWithin = (maxWait: Duration.DurationInput): Effect.Effect<AccessToken, HttpError | InvalidRequest> => {
      if (typeof maxWait === "number" && maxWait >= 0) return acquire(maxWait)
      // Duration reads NaN as zero; as an argument it is a mistake.
      const decoded = Number.isNaN(maxWait) ? Option.none() : Duration.decodeUnknown(maxWait)
      return Option.isSome(decoded)
        ? acquire(Duration.toMillis(decoded.value))
        : Effect.fail(
          new InvalidRequest({ operation: "token", field: "maxWait", reason: "must be a duration, e.g. \"5 seconds\"" })
        )
    }

    return TokenService.of({ get: acquire(undefined), getWithin, invalidate })
  }
)

/** The token cache, over the `HttpTransport` and `ClinicalConfig` the application provides. */
export const layer: Layer.Layer<TokenService, never, ClinicalConfig | HttpTransport> = Layer.scoped(TokenService, make)

/** A valid token from the `TokenService` in context. */
export const get: Effect.Effect<AccessToken, HttpError, TokenService> = Effect.flatMap(
  TokenService,
  (service) => service.get
)

/** A valid token from the `TokenService` in context, waiting at most `maxWait` for one being fetched. */
export const getWithin = (
  maxWait: Duration.DurationInput
): Effect.Effect<AccessToken, HttpError | InvalidRequest, TokenService> =>
  Effect.flatMap(TokenService, (service) => service.getWithin(maxWait))

/** Drops `token` from the `TokenService` in context if it is still the cached one. */
export const invalidate = (token: AccessToken): Effect.Effect<void, never, TokenService> =>
  Effect.flatMap(TokenService, (service) => service.invalidate(token))
