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
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Crypto from "node:crypto"
import * as Core from "../core/token/accessToken.js"
import * as FreshToken from "../core/token/freshToken.js"
import type * as TokenCache from "../core/token/tokenCache.js"
import * as Keeper from "../core/token/tokenKeeper.js"
import { storeKeyOf } from "../core/token/tokenStore.js"
import { ClinicalConfig } from "./ClinicalConfig.js"
import type { HttpError, InvalidRequest } from "./ClinicalError.js"
import { HttpTransport } from "./HttpTransport.js"
import * as RetrySettings from "./internal/call/retrySettings.js"
import { fromCore } from "./internal/fromCore.js"
import * as Telemetry from "./internal/observability/telemetry.js"
import { type AnyEffect, tokenLine } from "./internal/token/tokenLine.js"
import { requestToken, tokenUrl } from "./internal/token/tokenRequest.js"
import * as TokenSharing from "./internal/token/tokenSharing.js"
import * as TokenStore from "./TokenStore.js"

/** A token ready to use. All times are epoch milliseconds on the local clock. */
export type AccessToken = Keeper.KeptToken<Redacted.Redacted<string>>

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

/** A `maxWait` in milliseconds, or the `InvalidRequest` it is (the core's reading, Effect 3's durations). */
const maxWaitMillis = (maxWait: Duration.DurationInput): number | InvalidRequest => {
  const millis = Core.maxWaitMillisOf(maxWait, durationMillis)
  return typeof millis === "number" ? millis : fromCore(millis)
}

/** A duration in Effect 3's forms, in milliseconds. */
const durationMillis = (value: unknown): number | undefined =>
  Option.getOrUndefined(Option.map(Duration.decodeUnknown(value), Duration.toMillis))

/** A refresh in flight: every waiter awaits its outcome. */
type Refresh = Deferred.Deferred<AccessToken, HttpError>

/** What the core's keeper (core/token/tokenKeeper.ts) needs of Effect 3 besides the token line. */
const keeperLine: Keeper.KeeperLine<AnyEffect, Redacted.Redacted<string>, Refresh, HttpError> = {
  ...tokenLine,
  clockWith: (f) => Effect.clockWith((clock) => f(clock.unsafeCurrentTimeMillis())),
  errorOf: (cause) => Option.getOrUndefined(Cause.failureOption(cause as Cause.Cause<HttpError>)),
  interruptedOnly: (cause) => Cause.isInterruptedOnly(cause as Cause.Cause<unknown>),
  withSpan: (effect, name, attributes) => Effect.withSpan(effect, name, { attributes }),
  countRefresh: (reason) => Metric.increment(Metric.tagged(Telemetry.tokenRefreshes, "reason", reason)),
  setLifetime: (seconds) => Metric.set(Telemetry.tokenLifetime, seconds),
  setSkew: (millis) => Metric.set(Telemetry.serverClockSkew, millis)
}

/**
 * Builds the token cache (the core's `TokenKeeper`). Owns fibers, so it needs a `Scope`: use
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
    const url = tokenUrl(config)
    // Work not waited for, the sharing's and the refresh's, runs in the layer's scope.
    const inScope = (effect: AnyEffect) => Effect.asVoid(Effect.forkIn(effect, scope))
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
      url,
      background: inScope,
      secrets: [config.applicationId]
    })
    const lock = yield* Effect.makeSemaphore(1)
    const keeper: Keeper.TokenKeeper<AnyEffect, Redacted.Redacted<string>, Refresh, HttpError> = new Keeper
      .TokenKeeper({
      windows,
      policy: RetrySettings.fromConfig(config),
      url,
      sharing,
      locked: lock.withPermits(1),
      fork: inScope
    }, keeperLine)
    const service = TokenService.of({
      get: keeper.acquire(undefined),
      getWithin: (maxWait) => {
        const millis = maxWaitMillis(maxWait)
        return typeof millis === "number" ? keeper.acquire(millis) : Effect.fail(millis)
      },
      invalidate: (token) => keeper.invalidate(token) as Effect.Effect<void>
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
