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
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Crypto from "node:crypto"
import { retryPolicyOf } from "../../core/config/settings.js"
import * as Core from "../../core/token/accessToken.js"
import * as FreshToken from "../../core/token/freshToken.js"
import type * as TokenCache from "../../core/token/tokenCache.js"
import * as Keeper from "../../core/token/tokenKeeper.js"
import { storeKeyOf } from "../../core/token/tokenStore.js"
import { ClinicalConfig } from "./ClinicalConfig.js"
import type { HttpError, InvalidRequest } from "./ClinicalError.js"
import { HttpTransport } from "./HttpTransport.js"
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
   * `TransportError` (`Deadline`). A `maxWait` that is not a duration is an `InvalidRequest`.
   */
  readonly getWithin: (maxWait: Duration.Input) => Effect.Effect<AccessToken, HttpError | InvalidRequest>
  /** Drops `token` from the cache if, and only if, it is still the cached one. */
  readonly invalidate: (token: AccessToken) => Effect.Effect<void>
}

/** The token cache. */
export class TokenService extends Context.Service<TokenService, Service>()("effect-clinical/TokenService") {}

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

/** A refresh in flight: every waiter awaits its outcome. */
type Refresh = Deferred.Deferred<AccessToken, HttpError>

/** What the core's keeper (core/token/tokenKeeper.ts) needs of Effect 4 besides the token line. */
const keeperLine: Keeper.KeeperLine<AnyEffect, Redacted.Redacted<string>, Refresh, HttpError> = {
  ...tokenLine,
  clockWith: (f) => Effect.clockWith((clock) => f(clock.currentTimeMillisUnsafe())),
  errorOf: (cause) => Option.getOrUndefined(Cause.findErrorOption(cause as Cause.Cause<HttpError>)),
  interruptedOnly: (cause) => Cause.hasInterruptsOnly(cause as Cause.Cause<unknown>),
  withSpan: (effect, name, attributes) => effect.pipe(Effect.withSpan(name, { attributes }, Telemetry.NO_STACK)),
  countRefresh: (reason) => Metric.update(Metric.withAttributes(Telemetry.tokenRefreshes, { reason }), 1),
  setLifetime: (seconds) => Metric.update(Telemetry.tokenLifetime, seconds),
  setSkew: (millis) => Metric.update(Telemetry.serverClockSkew, millis)
}

/** Builds the token cache (the core's `TokenKeeper`). Owns fibers, so it needs a `Scope`: use {@link layer}. */
export const make: Effect.Effect<Service, never, ClinicalConfig | HttpTransport | Scope.Scope> = Effect.gen(
  function*() {
    const config = yield* ClinicalConfig
    const transport = yield* HttpTransport
    const windows: TokenCache.Windows = {
      softWindowMillis: Duration.toMillis(config.softRefreshWindow),
      hardWindowMillis: Duration.toMillis(config.hardRefreshWindow)
    }
    const scope = yield* Effect.scope
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
    const lock = yield* Semaphore.make(1)
    const keeper: Keeper.TokenKeeper<AnyEffect, Redacted.Redacted<string>, Refresh, HttpError> = new Keeper
      .TokenKeeper({
      windows,
      policy: retryPolicyOf(config, Duration.toMillis),
      url,
      sharing,
      locked: Semaphore.withPermits(lock, 1),
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
