/**
 * The bearer token, cached and kept fresh: the core's decisions (core/token/tokenCache.ts) with
 * Effect 4's lock, `Deferred` and fibers.
 *
 * - One token request in flight at a time, shared by every waiter (no stampede on a cold cache).
 * - Soft window: the next caller starts a refresh in the background and still gets the current
 *   token at once. Hard window (or no token): callers wait for the new one.
 * - The refresh runs in a fiber owned by this layer's scope, so a caller that is interrupted or
 *   times out never cancels the refresh that others wait on.
 * - A failed refresh is never cached; a failed background refresh is retried with jittered backoff
 *   while the current token is outside its hard window.
 * - After the token endpoint answers 429 or 503 with `Retry-After`, token requests fail fast with
 *   that error until the time has passed.
 * - `invalidate` drops a token only if it is still the cached one (by generation), and drops it
 *   from the token store too, if it is still the one stored.
 * - All time is read from Effect's `Clock`, so `TestClock` drives all of it.
 *
 * A new token comes through the token store (`TokenStore`, internal/token/tokenSharing): the one in
 * context when the layer is built (`TokenStore.layerRedis` shares it with the fleet, one
 * `TokenStore.layerMemory` with the clients of one process), else a memory store of this instance's
 * own. The local cache stays in front: a fresh token costs no round trip to the store.
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
import * as Semaphore from "effect/Semaphore"
import * as Crypto from "node:crypto"
import type * as RetryPolicy from "../../core/call/retryPolicy.js"
import { retryPolicyOf } from "../../core/config/settings.js"
import * as Core from "../../core/token/accessToken.js"
import * as FreshToken from "../../core/token/freshToken.js"
import * as TokenCache from "../../core/token/tokenCache.js"
import { storeKeyOf } from "../../core/token/tokenStore.js"
import { ClinicalConfig } from "./ClinicalConfig.js"
import { type HttpError, InvalidRequest, type RateLimited, type ServerError, TransportError } from "./ClinicalError.js"
import { HttpTransport } from "./HttpTransport.js"
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
   * `TransportError` (`Deadline`). A `maxWait` that is not a duration is an `InvalidRequest`.
   */
  readonly getWithin: (maxWait: Duration.Input) => Effect.Effect<AccessToken, HttpError | InvalidRequest>
  /** Drops `token` from the cache if, and only if, it is still the cached one. */
  readonly invalidate: (token: AccessToken) => Effect.Effect<void>
}

/** The token cache. */
export class TokenService extends Context.Service<TokenService, Service>()("effect-clinical/TokenService") {}

/** A refresh in flight: every waiter awaits its outcome. */
type Refresh = Deferred.Deferred<AccessToken, HttpError>

type CacheState = TokenCache.State<AccessToken, Refresh, RateLimited | ServerError>

/** What a caller does once the state has been decided on: take this outcome, or wait for a refresh. */
type Next =
  | { readonly _tag: "Now"; readonly outcome: Effect.Effect<AccessToken, HttpError> }
  | { readonly _tag: "Wait"; readonly refresh: Refresh }

/** The `Authorization` value of a token. */
const bearer = (token: Redacted.Redacted<string>) => Redacted.make(`Bearer ${Redacted.value(token)}`)

/** A new token's facts, on the refresh's span, in the metrics and the log. */
const reportIssued = (token: AccessToken) =>
  Effect.all([
    Effect.annotateCurrentSpan({
      "clinical.token.generation": token.generation,
      "clinical.token.lifetime_seconds": Math.round(token.lifetimeMillis / 1000),
      "clinical.server_clock_skew_ms": token.serverClockSkewMillis ?? "unknown",
      "clinical.token.source": token.source
    }),
    Metric.update(Telemetry.tokenLifetime, Math.round(token.lifetimeMillis / 1000)),
    token.serverClockSkewMillis === undefined
      ? Effect.void
      : Metric.update(Telemetry.serverClockSkew, token.serverClockSkewMillis),
    Effect.logDebug("token issued").pipe(Effect.annotateLogs({ generation: token.generation }))
  ], { discard: true })

/** A refresh's failure, on its span and in the log: its tag alone. */
const reportFailure = (cause: Cause.Cause<HttpError>) => {
  const error = Option.match(Cause.findErrorOption(cause), {
    onNone: () => (Cause.hasInterruptsOnly(cause) ? "interrupted" : "defect"),
    onSome: (error) => error._tag
  })
  return Effect.andThen(
    Effect.annotateCurrentSpan("clinical.error", error),
    Effect.logWarning("token refresh failed").pipe(Effect.annotateLogs({ error }))
  )
}

/** `maxWait` in milliseconds, or the `InvalidRequest` it is (the core's reading, Effect 4's durations). */
const maxWaitMillis = (maxWait: Duration.Input): number | InvalidRequest => {
  const millis = Core.maxWaitMillisOf(maxWait, durationMillis)
  return typeof millis === "number" ? millis : fromCore(millis)
}

/** A duration in Effect 4's forms, in milliseconds. */
const durationMillis = (value: unknown): number | undefined => {
  const decoded = Duration.fromInput(value as Duration.Input)
  return Option.isSome(decoded) ? Duration.toMillis(decoded.value) : undefined
}

/**
 * The token cache's moving parts: an interpreter of the pure decisions in core/token/tokenCache,
 * with the lock, the `Deferred` and the fork into the layer's scope here.
 */
class TokenKeeper {
  // Changed one step at a time under the lock, read without it (the fast path).
  private latest: CacheState = TokenCache.empty
  // The last token refused (401/419), by fingerprint: the refresh that follows must not take it again.
  private refused: string | undefined = undefined
  private cutReported = false
  private readonly policy: RetryPolicy.RetryPolicy
  private readonly url: string

  constructor(
    config: ClinicalConfig["Service"],
    private readonly windows: TokenCache.Windows,
    private readonly sharing: TokenSharing.Sharing,
    private readonly lock: Semaphore.Semaphore,
    private readonly scope: Scope.Scope
  ) {
    this.url = tokenUrl(config)
    this.policy = retryPolicyOf(config, Duration.toMillis)
  }

  /** The cached token while it is before its soft window (read without the lock, as the fast path is). */
  fresh(now: number): AccessToken | undefined {
    return TokenCache.fresh(this.latest, now)
  }

  acquire(maxWaitMillis: number | undefined): Effect.Effect<AccessToken, HttpError> {
    return Effect.clockWith((clock) => {
      const now = clock.currentTimeMillisUnsafe()
      const token = this.fresh(now)
      return token !== undefined
        ? Effect.succeed(token)
        : Effect.flatMap(this.decide(now), (next) => this.follow(next, maxWaitMillis))
    })
  }

  // The store first, so that the refresh that follows cannot find the refused token there; and
  // the refresh avoids it even if the store could not drop it. Only the cached token counts.
  invalidate(token: AccessToken): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (typeof token !== "object" || token === null) return Effect.void
      if (TokenCache.cachedOf(this.latest)?.generation !== token.generation) return Effect.void
      const refused = this.refused = TokenStore.fingerprint(token.token)
      return Effect.andThen(
        this.sharing.invalidate(refused),
        this.modify((current) => [undefined, TokenCache.invalidated(current, token.generation)] as const)
      )
    })
  }

  /** The store's tokens a refresh must not take: the one it replaces, and the last one refused. */
  private avoiding(held: TokenCache.Cached<AccessToken> | undefined): ReadonlyArray<string> {
    const avoid = held === undefined ? [] : [TokenStore.fingerprint(held.token.token)]
    return this.refused === undefined ? avoid : [...avoid, this.refused]
  }

  private modify<A>(step: (current: CacheState) => readonly [A, CacheState]): Effect.Effect<A> {
    return Semaphore.withPermits(this.lock, 1)(Effect.sync(() => {
      const [result, next] = step(this.latest)
      this.latest = next
      return result
    }))
  }

  // A background refresh retries as `backgroundStep` says, while callers keep the current token.
  private requestUntil(hardAt: number, avoid: ReadonlyArray<string>, retry = 1): Effect.Effect<IssuedToken, HttpError> {
    return Effect.catch(
      this.sharing.obtain(avoid),
      (error) =>
        Effect.flatMap(Effect.all([Clock.currentTimeMillis, Random.next]), ([now, random]) => {
          const step = TokenCache.backgroundStep(this.policy, error, retry, now, hardAt, random)
          if (step._tag === "GiveUp") return Effect.fail(error)
          return Effect.logDebug("background token refresh failed; retrying").pipe(
            Effect.annotateLogs({ error: error._tag, delayMillis: Math.round(step.delayMillis) }),
            Effect.andThen(Effect.sleep(Duration.millis(step.delayMillis))),
            Effect.andThen(this.requestUntil(hardAt, avoid, retry + 1))
          )
        })
    )
  }

  // Stores the outcome; the caller hands it to every waiter.
  private settle(exit: Exit.Exit<IssuedToken, HttpError>, refresh: Refresh, reason: TokenCache.Reason, now: number) {
    return this.modify((current): readonly [Exit.Exit<AccessToken, HttpError>, CacheState] => {
      if (Exit.isSuccess(exit)) {
        const next = TokenCache.succeeded(
          current,
          (generation) =>
            Core.cachedToken(this.windows, exit.value, generation, bearer, {
              source: exit.value.source,
              storeGeneration: exit.value.storeGeneration
            })
        )
        return [Exit.succeed(next.cached.token), next]
      }
      const error = Cause.findErrorOption(exit.cause)
      const throttle = Option.isSome(error) ? TokenCache.throttleOf(error.value, now) : undefined
      const ours = current._tag === "Refreshing" && current.refresh === refresh
      return [Exit.failCause(exit.cause), ours ? TokenCache.failed(current, reason, throttle) : current]
    })
  }

  /** A lifetime `maxTokenLifetime` cut, as a warning: once per cache, however many tokens it cuts. */
  private reportCut(token: AccessToken) {
    const cut = Core.lifetimeCut(token)
    if (this.cutReported || cut === undefined) return Effect.void
    this.cutReported = true
    return Effect.logWarning(Core.LIFETIME_CUT).pipe(Effect.annotateLogs(cut))
  }

  // Runs in the layer's scope. Whatever happens to it, the state forgets the refresh and every
  // waiter gets the outcome.
  private refresh(deferred: Refresh, reason: TokenCache.Reason, held: TokenCache.Cached<AccessToken> | undefined) {
    return Metric.update(Metric.withAttributes(Telemetry.tokenRefreshes, { reason }), 1).pipe(
      Effect.andThen(
        reason === "soft-window"
          ? this.requestUntil(held?.hardAt ?? 0, this.avoiding(held))
          : this.sharing.obtain(this.avoiding(held))
      ),
      Effect.onExit((exit) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => this.settle(exit, deferred, reason, now)).pipe(
          Effect.tap((outcome) =>
            Exit.match(outcome, {
              onFailure: reportFailure,
              onSuccess: (token) => Effect.andThen(reportIssued(token), this.reportCut(token))
            })
          ),
          Effect.flatMap((outcome) => Deferred.done(deferred, outcome))
        )
      ),
      Effect.withSpan(
        "TokenService.refresh",
        { attributes: { "clinical.refresh.reason": reason } },
        Telemetry.NO_STACK
      ),
      Effect.annotateLogs({ refreshReason: reason }),
      Effect.ignore,
      // Forked from inside the uninterruptible decision: the refresh itself stays interruptible,
      // or its timeouts could not fire and the layer could not close.
      Effect.interruptible,
      Effect.forkIn(this.scope)
    )
  }

  // The slow path, serialised by the lock: acts on the pure decision. Uninterruptible, so that a
  // caller interrupted here cannot fork a refresh the state never records.
  private decide(now: number): Effect.Effect<Next> {
    return Effect.uninterruptible(
      Effect.flatMap(
        Deferred.make<AccessToken, HttpError>(),
        (deferred) =>
          Semaphore.withPermits(this.lock, 1)(Effect.suspend(() => {
            const current = this.latest
            const decision = TokenCache.decide(current, now)
            const start = (reason: TokenCache.Reason) => {
              this.latest = TokenCache.started(current, deferred, reason)
              return this.refresh(deferred, reason, TokenCache.cachedOf(current))
            }
            switch (decision._tag) {
              case "Serve":
                return Effect.succeed<Next>({ _tag: "Now", outcome: Effect.succeed(decision.token) })
              case "ServeAndRefresh":
                return Effect.as(start("soft-window"), { _tag: "Now", outcome: Effect.succeed(decision.token) } as Next)
              case "Await":
                return Effect.succeed<Next>({ _tag: "Wait", refresh: decision.refresh })
              case "RefreshAndAwait":
                return Effect.as(start(decision.reason), { _tag: "Wait", refresh: deferred } as Next)
              case "FailFast":
                return Effect.succeed<Next>({
                  _tag: "Now",
                  outcome: Effect.andThen(
                    Metric.update(Telemetry.throttledFastFails, 1),
                    Effect.fail(fromCore(TokenCache.withRetryAfter(decision.error, decision.retryAfterMillis)))
                  )
                })
            }
          }))
      )
    )
  }

  private follow(next: Next, maxWaitMillis: number | undefined): Effect.Effect<AccessToken, HttpError> {
    if (next._tag === "Now") return next.outcome
    const waiting = Deferred.await(next.refresh)
    return maxWaitMillis === undefined ? waiting : Effect.timeoutOrElse(waiting, {
      duration: Duration.millis(maxWaitMillis),
      orElse: () =>
        Effect.fail(
          new TransportError({
            operation: "token",
            reason: "Deadline",
            method: "POST",
            url: this.url,
            detail: `no token within ${maxWaitMillis} ms`
          })
        )
    })
  }
}

/** Builds the token cache. Owns fibers, so it needs a `Scope`: use {@link layer}. */
export const make: Effect.Effect<Service, never, ClinicalConfig | HttpTransport | Scope.Scope> = Effect.gen(
  function*() {
    const config = yield* ClinicalConfig
    const transport = yield* HttpTransport
    const windows: TokenCache.Windows = {
      softWindowMillis: Duration.toMillis(config.softRefreshWindow),
      hardWindowMillis: Duration.toMillis(config.hardRefreshWindow)
    }
    const scope = yield* Effect.scope
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
    const keeper = new TokenKeeper(config, windows, sharing, yield* Semaphore.make(1), scope)
    const service = TokenService.of({
      get: keeper.acquire(undefined),
      getWithin: (maxWait) => {
        const millis = maxWaitMillis(maxWait)
        return typeof millis === "number" ? keeper.acquire(millis) : Effect.fail(millis)
      },
      invalidate: (token) => keeper.invalidate(token)
    })
    // The call's common path reads the fresh token in a callback, with no Effect.
    FreshToken.register(service, (now) => keeper.fresh(now))
    return service
  }
)

/**
 * The token store's name for a client's token: a hash of where tokens come from and of the
 * ApplicationId (in one letter case), so that clients of one application share it and the store
 * never holds the ApplicationId itself.
 */
export const storeKey = (config: ClinicalConfig["Service"]): string =>
  storeKeyOf(tokenUrl(config), Redacted.value(config.applicationId))

/**
 * The token cache, over the `HttpTransport` and `ClinicalConfig` the application provides, and the
 * `TokenStore` if one is provided (else a memory store of its own).
 */
export const layer: Layer.Layer<TokenService, never, ClinicalConfig | HttpTransport> = Layer.effect(TokenService, make)
