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
import * as Crypto from "node:crypto"
import type * as RetryPolicy from "../core/call/retryPolicy.js"
import * as Core from "../core/token/accessToken.js"
import * as FreshToken from "../core/token/freshToken.js"
import * as TokenCache from "../core/token/tokenCache.js"
import { storeKeyOf } from "../core/token/tokenStore.js"
import { ClinicalConfig } from "./ClinicalConfig.js"
import { type HttpError, InvalidRequest, type RateLimited, type ServerError, TransportError } from "./ClinicalError.js"
import { HttpTransport } from "./HttpTransport.js"
import * as RetrySettings from "./internal/call/retrySettings.js"
import { fromCore } from "./internal/fromCore.js"
import * as Telemetry from "./internal/observability/telemetry.js"
import { type IssuedToken, requestToken, tokenUrl } from "./internal/token/tokenRequest.js"
import * as TokenSharing from "./internal/token/tokenSharing.js"
import * as TokenStore from "./TokenStore.js"

/** A token ready to use. All times are epoch milliseconds on the local clock. */
export interface AccessToken extends Core.AccessToken<Redacted.Redacted<string>> {
  /** Where it came from: the token endpoint, or the token store (another instance of the fleet asked for it). */
  readonly source: "server" | "store"
  /**
   * Its number in the token store, the same on every instance sharing it (see `TokenStore`);
   * `undefined` when it is not in the store (the store was unavailable when it was obtained).
   */
  readonly storeGeneration: number | undefined
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

/** A refresh in flight: every waiter awaits its outcome. */
type Refresh = Deferred.Deferred<AccessToken, HttpError>

/** What a caller does once the state has been decided on: take this effect's outcome, or wait for a refresh. */
type Next =
  | { readonly _tag: "Now"; readonly outcome: Effect.Effect<AccessToken, HttpError> }
  | { readonly _tag: "Wait"; readonly refresh: Refresh }

/** The cache's state: this line's errors held for a pause. */
type CacheState = TokenCache.State<AccessToken, Refresh, RateLimited | ServerError>

/** A token as cached (the core's `cachedToken`), with where it came from. */
const cachedToken = (
  windows: TokenCache.Windows,
  issued: IssuedToken,
  generation: number
): TokenCache.Cached<AccessToken> =>
  Core.cachedToken(windows, issued, generation, bearer, {
    source: issued.source,
    storeGeneration: issued.storeGeneration
  })

/** The `Authorization` value of a token. */
const bearer = (token: Redacted.Redacted<string>) => Redacted.make(`Bearer ${Redacted.value(token)}`)

/** A refresh's failure, on its span and in the log. */
const reportFailure = (cause: Cause.Cause<HttpError>) => {
  const error = Option.match(Cause.failureOption(cause), {
    onNone: () => (Cause.isInterruptedOnly(cause) ? "interrupted" : "defect"),
    onSome: (error) => error._tag
  })
  return Effect.zipRight(
    Effect.annotateCurrentSpan("clinical.error", error),
    Effect.logWarning("token refresh failed").pipe(Effect.annotateLogs({ error }))
  )
}

/** A new token's facts, on the refresh's span, in the metrics and the log. */
const reportIssued = (token: AccessToken) => {
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
      "clinical.server_clock_skew_ms": facts.serverClockSkewMillis,
      "clinical.token.source": token.source
    }),
    Metric.set(Telemetry.tokenLifetime, facts.lifetimeSeconds),
    token.serverClockSkewMillis === undefined
      ? Effect.void
      : Metric.set(Telemetry.serverClockSkew, token.serverClockSkewMillis),
    Effect.logDebug("token issued").pipe(Effect.annotateLogs(facts))
  ], { discard: true })
}

/** `maxWait` in milliseconds, or the `InvalidRequest` it is (the core's reading, Effect 3's durations). */
const maxWaitMillis = (maxWait: Duration.DurationInput): number | InvalidRequest => {
  const millis = Core.maxWaitMillisOf(maxWait, durationMillis)
  return typeof millis === "number" ? millis : fromCore(millis)
}

/** A duration in Effect 3's forms, in milliseconds. */
const durationMillis = (value: unknown): number | undefined =>
  Option.getOrUndefined(Option.map(Duration.decodeUnknown(value), Duration.toMillis))

/**
 * The token cache's moving parts, one method per step: an interpreter of the pure decisions in
 * `core/token/tokenCache` (which hold every rule), with the lock, the `Deferred` and the fork
 * into the layer's scope here.
 */
class TokenKeeper {
  // The state: changed one step at a time under the lock (as a SynchronizedRef would), read
  // without it (the fast path, and the call's common path, which reads it synchronously).
  private latest: CacheState = TokenCache.empty
  // The last token refused (401/419), by fingerprint: the refresh that follows must not take it again.
  private refused: string | undefined = undefined
  // An absurd lifetime is cut to maxTokenLifetime; the operator hears of it once, not on every refresh.
  private clampReported = false
  private readonly policy: RetryPolicy.RetryPolicy
  private readonly url: string

  constructor(
    config: Context.Tag.Service<ClinicalConfig>,
    private readonly windows: TokenCache.Windows,
    private readonly sharing: TokenSharing.Sharing,
    private readonly lock: Effect.Semaphore,
    private readonly scope: Scope.Scope
  ) {
    this.policy = RetrySettings.fromConfig(config)
    this.url = tokenUrl(config)
  }

  /** A token fresh at `now` without a step of the lock, or `undefined`. */
  fresh(now: number): AccessToken | undefined {
    return TokenCache.fresh(this.latest, now)
  }

  acquire(maxWaitMillis: number | undefined): Effect.Effect<AccessToken, HttpError> {
    return Effect.clockWith((clock) => {
      const now = clock.unsafeCurrentTimeMillis()
      // Fast path: a fresh token, no lock taken, no timer.
      const token = this.fresh(now)
      return token !== undefined
        ? Effect.succeed(token)
        : Effect.flatMap(this.decide(now), (next) => this.follow(next, maxWaitMillis))
    })
  }

  // The store first, so that the refresh that follows cannot find the refused token there; and
  // the refresh avoids it even if the store could not drop it. Only the cached token counts: a
  // late refusal of an older one changes nothing.
  invalidate(token: AccessToken): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (typeof token !== "object" || token === null) return Effect.void
      if (TokenCache.cachedOf(this.latest)?.generation !== token.generation) return Effect.void
      const refused = this.refused = TokenStore.fingerprint(token.token)
      return Effect.zipRight(
        this.sharing.invalidate(refused),
        this.modify((current) =>
          Effect.succeed([undefined, TokenCache.invalidated(current, token.generation)] as const)
        )
      )
    })
  }

  private modify<A>(
    step: (
      current: CacheState
    ) => Effect.Effect<readonly [A, CacheState]>
  ): Effect.Effect<A> {
    return this.lock.withPermits(1)(
      Effect.suspend(() =>
        Effect.map(step(this.latest), ([result, next]) => {
          this.latest = next
          return result
        })
      )
    )
  }

  private avoiding(held: TokenCache.Cached<AccessToken> | undefined): ReadonlyArray<string> {
    const avoid = held === undefined ? [] : [TokenStore.fingerprint(held.token.token)]
    return this.refused === undefined ? avoid : [...avoid, this.refused]
  }

  // A background refresh retries as `backgroundStep` says, while callers keep the current token.
  private requestUntil(hardAt: number, avoid: ReadonlyArray<string>, retry = 1): Effect.Effect<IssuedToken, HttpError> {
    return Effect.catchAll(
      this.sharing.obtain(avoid),
      (error) =>
        Effect.flatMap(Effect.zip(Clock.currentTimeMillis, Random.next), ([now, random]) => {
          const step = TokenCache.backgroundStep(this.policy, error, retry, now, hardAt, random)
          if (step._tag === "GiveUp") return Effect.fail(error)
          return Effect.logDebug("background token refresh failed; retrying").pipe(
            Effect.annotateLogs({ error: error._tag, delayMillis: Math.round(step.delayMillis) }),
            Effect.zipRight(Effect.sleep(Duration.millis(step.delayMillis))),
            Effect.zipRight(this.requestUntil(hardAt, avoid, retry + 1))
          )
        })
    )
  }

  // Stores the outcome and hands it to every waiter.
  private settle(exit: Exit.Exit<IssuedToken, HttpError>, refresh: Refresh, reason: TokenCache.Reason, now: number) {
    return this.modify((current) => {
      if (Exit.isSuccess(exit)) {
        const next = TokenCache.succeeded(current, (generation) => cachedToken(this.windows, exit.value, generation))
        return Effect.succeed([Exit.succeed(next.cached.token), next] as const)
      }
      const error = Cause.failureOption(exit.cause)
      const throttle = Option.isSome(error) ? TokenCache.throttleOf(error.value, now) : undefined
      // Only the refresh the state records may end it (defensive: there is never another).
      const ours = current._tag === "Refreshing" && current.refresh === refresh
      const next = ours ? TokenCache.failed(current, reason, throttle) : current
      return Effect.succeed([Exit.failCause(exit.cause) as Exit.Exit<AccessToken, HttpError>, next] as const)
    })
  }

  private reportClamp(token: AccessToken) {
    const cut = Core.lifetimeCut(token)
    if (this.clampReported || cut === undefined) return Effect.void
    this.clampReported = true
    return Effect.logWarning(Core.LIFETIME_CUT).pipe(Effect.annotateLogs(cut))
  }

  private report(outcome: Exit.Exit<AccessToken, HttpError>) {
    return Exit.match(outcome, {
      onFailure: reportFailure,
      onSuccess: (token) => Effect.zipRight(reportIssued(token), this.reportClamp(token))
    })
  }

  // Runs in the layer's scope. Whatever happens to it (success, failure, interruption when the
  // layer closes), the state forgets the refresh and every waiter gets the outcome.
  private refresh(deferred: Refresh, reason: TokenCache.Reason, held: TokenCache.Cached<AccessToken> | undefined) {
    return Metric.increment(Metric.tagged(Telemetry.tokenRefreshes, "reason", reason)).pipe(
      Effect.zipRight(
        reason === "soft-window"
          ? this.requestUntil(held?.hardAt ?? 0, this.avoiding(held))
          : this.sharing.obtain(this.avoiding(held))
      ),
      Effect.onExit((exit) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => this.settle(exit, deferred, reason, now)).pipe(
          Effect.tap((outcome) => this.report(outcome)),
          Effect.flatMap((outcome) => Deferred.done(deferred, outcome))
        )
      ),
      Effect.withSpan("TokenService.refresh", { attributes: { "clinical.refresh.reason": reason } }),
      Effect.annotateLogs({ refreshReason: reason }),
      // The outcome went to the waiters (and the log) above; the fiber itself ends quietly.
      Effect.ignore,
      // Forked from inside the uninterruptible decision: the refresh itself must stay
      // interruptible, or its timeouts could not fire and the layer could not close.
      Effect.interruptible,
      Effect.forkIn(this.scope)
    )
  }

  /** Starts a refresh and records it, in one step of the lock. */
  private start(current: CacheState, reason: TokenCache.Reason) {
    return Effect.flatMap(Deferred.make<AccessToken, HttpError>(), (deferred) =>
      Effect.as(
        this.refresh(deferred, reason, TokenCache.cachedOf(current)),
        [deferred, TokenCache.started(current, deferred, reason)] as const
      ))
  }

  // The slow path, serialised by the lock: acts on the pure decision. Uninterruptible, so that a
  // caller interrupted here cannot fork a refresh the state never records (a second token
  // request); the wait it returns runs outside, interruptibly.
  private decide(now: number) {
    return Effect.uninterruptible(this.modify((current) => this.decided(current, now)))
  }

  private decided(
    current: CacheState,
    now: number
  ): Effect.Effect<readonly [Next, CacheState]> {
    const decision = TokenCache.decide(current, now)
    switch (decision._tag) {
      case "Serve":
        return Effect.succeed([{ _tag: "Now", outcome: Effect.succeed(decision.token) }, current])
      case "ServeAndRefresh":
        return Effect.map(
          this.start(current, "soft-window"),
          ([, next]) => [{ _tag: "Now", outcome: Effect.succeed(decision.token) }, next] as const
        )
      case "Await":
        return Effect.succeed([{ _tag: "Wait", refresh: decision.refresh }, current])
      case "RefreshAndAwait":
        return Effect.map(
          this.start(current, decision.reason),
          ([deferred, next]) => [{ _tag: "Wait", refresh: deferred }, next] as const
        )
      case "FailFast": {
        const outcome = Effect.zipRight(
          Metric.increment(Telemetry.throttledFastFails),
          Effect.fail(fromCore(TokenCache.withRetryAfter(decision.error, decision.retryAfterMillis)))
        )
        return Effect.succeed([{ _tag: "Now", outcome }, current])
      }
    }
  }

  private follow(next: Next, maxWaitMillis: number | undefined): Effect.Effect<AccessToken, HttpError> {
    if (next._tag === "Now") return next.outcome
    const waiting = Deferred.await(next.refresh)
    return maxWaitMillis === undefined ? waiting : Effect.timeoutFail(waiting, {
      duration: Duration.millis(maxWaitMillis),
      onTimeout: () =>
        new TransportError({
          operation: "token",
          reason: "Deadline",
          method: "POST",
          url: this.url,
          detail: `no token within ${maxWaitMillis} ms`
        })
    })
  }
}

/**
 * Builds the token cache (see {@link TokenKeeper}). Owns fibers, so it needs a `Scope`: use
 * {@link layer}.
 */
export const make: Effect.Effect<Service, never, ClinicalConfig | HttpTransport | Scope.Scope> = Effect.gen(
  function*() {
    const config = yield* ClinicalConfig
    const transport = yield* HttpTransport
    const scope = yield* Effect.scope
    const windows: TokenCache.Windows = {
      softWindowMillis: Duration.toMillis(config.softRefreshWindow),
      hardWindowMillis: Duration.toMillis(config.hardRefreshWindow)
    }
    const store = Option.getOrElse(yield* Effect.serviceOption(TokenStore.TokenStore), TokenStore.memory)
    const sharing = TokenSharing.make({
      store,
      key: storeKey(config),
      owner: Crypto.randomUUID(),
      limits: {
        hardWindowMillis: windows.hardWindowMillis,
        maxLifetimeMillis: Duration.toMillis(config.maxTokenLifetime),
        maxPauseMillis: Duration.toMillis(config.maxRetryAfter)
      },
      tokenTimeoutMillis: Duration.toMillis(config.tokenTimeout),
      request: requestToken(config, transport),
      url: tokenUrl(config),
      background: (effect) => Effect.asVoid(Effect.forkIn(effect, scope)),
      secrets: [config.applicationId]
    })
    const keeper = new TokenKeeper(config, windows, sharing, yield* Effect.makeSemaphore(1), scope)
    const service = TokenService.of({
      get: keeper.acquire(undefined),
      getWithin: (maxWait) => {
        const millis = maxWaitMillis(maxWait)
        return typeof millis === "number" ? keeper.acquire(millis) : Effect.fail(millis)
      },
      invalidate: (token) => keeper.invalidate(token)
    })
    FreshToken.register(service, (now) => keeper.fresh(now))
    return service
  }
)

/**
 * The token store's name for a client's token: a hash of where tokens come from and of the
 * ApplicationId (in one letter case), so that clients of one application share it and the store
 * never holds the ApplicationId itself.
 */
export const storeKey = (config: Context.Tag.Service<ClinicalConfig>): string =>
  storeKeyOf(tokenUrl(config), Redacted.value(config.applicationId))

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
