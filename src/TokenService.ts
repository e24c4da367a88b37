/**
 * The bearer token, cached and kept fresh.
 *
 * - One token request in flight at a time, shared by every waiter (no stampede on a cold cache).
 * - Soft window: the next caller starts a refresh in the background and still gets the current
 *   token at once. Hard window (or no token): callers wait for the new one.
 * - The refresh runs in a fiber owned by this layer's scope, so a caller that is interrupted or
 *   times out never cancels the refresh that others wait on.
 * - A failed refresh is never cached: the next caller tries again.
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
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as SynchronizedRef from "effect/SynchronizedRef"
import { ClinicalConfig } from "./ClinicalConfig.js"
import type { HttpError } from "./ClinicalError.js"
import { HttpTransport } from "./HttpTransport.js"
import { type IssuedToken, requestToken } from "./internal/tokenRequest.js"

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
  /** The lifetime the server gave (`TOKEN_EXPIRES - Date`). */
  readonly lifetimeMillis: number
  /** The server's clock minus ours, from its `Date` header; `undefined` when it sent none. */
  readonly serverClockSkewMillis: number | undefined
}

/** The token cache. */
export interface Service {
  /** A token that is valid now; obtains or refreshes one when needed. */
  readonly get: Effect.Effect<AccessToken, HttpError>
  /** Drops `token` from the cache if, and only if, it is still the cached one. */
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

interface State {
  readonly cached: Cached | undefined
  /** The refresh in flight, if any: every waiter awaits this one. */
  readonly refreshing: Deferred.Deferred<AccessToken, HttpError> | undefined
  readonly generation: number
}

/** Why a refresh was started; shown in logs. */
type RefreshReason = "empty" | "soft-window" | "hard-window" | "expired"

/** Builds the token cache. Owns fibers, so it needs a `Scope`: use {@link layer}. */
export const make: Effect.Effect<Service, never, ClinicalConfig | HttpTransport | Scope.Scope> = Effect.gen(
  function*() {
    const config = yield* ClinicalConfig
    const transport = yield* HttpTransport
    const scope = yield* Effect.scope
    const state = yield* SynchronizedRef.make<State>({ cached: undefined, refreshing: undefined, generation: 0 })
    const softWindow = Duration.toMillis(config.softRefreshWindow)
    const hardWindow = Duration.toMillis(config.hardRefreshWindow)

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
          serverClockSkewMillis: issued.serverClockSkewMillis
        },
        softAt: expiresAt - Math.min(softWindow, lifetime / 2),
        hardAt: expiresAt - Math.min(hardWindow, lifetime / 10)
      }
    }

    // Runs in the layer's scope. Whatever happens to it (success, failure, interruption when the
    // layer closes), the state forgets the refresh and every waiter gets the outcome.
    const refresh = (deferred: Deferred.Deferred<AccessToken, HttpError>, reason: RefreshReason) =>
      requestToken(config, transport).pipe(
        Effect.onExit((exit) =>
          SynchronizedRef.modify(state, (current): [Exit.Exit<AccessToken, HttpError>, State] => {
            if (Exit.isFailure(exit)) return [Exit.failCause(exit.cause), { ...current, refreshing: undefined }]
            const generation = current.generation + 1
            const cached = toCached(exit.value, generation)
            return [Exit.succeed(cached.token), { cached, refreshing: undefined, generation }]
          }).pipe(
            Effect.tap((outcome) =>
              Exit.match(outcome, {
                onFailure: (cause) =>
                  Effect.logWarning("token refresh failed").pipe(
                    Effect.annotateLogs({
                      error: Option.match(Cause.failureOption(cause), {
                        onNone: () => (Cause.isInterruptedOnly(cause) ? "interrupted" : "defect"),
                        onSome: (error) => error._tag
                      })
                    })
                  ),
                onSuccess: (token) =>
                  Effect.logDebug("token issued").pipe(
                    Effect.annotateLogs({
                      generation: token.generation,
                      lifetimeSeconds: Math.round(token.lifetimeMillis / 1000),
                      serverClockSkewMillis: token.serverClockSkewMillis ?? "unknown"
                    })
                  )
              })
            ),
            Effect.flatMap((outcome) => Deferred.done(deferred, outcome))
          )
        ),
        Effect.annotateLogs({ refreshReason: reason }),
        Effect.forkIn(scope)
      )

    const startRefresh = (current: State, reason: RefreshReason) =>
      Effect.gen(function*() {
        const deferred = yield* Deferred.make<AccessToken, HttpError>()
        yield* refresh(deferred, reason)
        return [deferred, { ...current, refreshing: deferred }] as const
      })

    // The slow path, serialised by the SynchronizedRef: decides, atomically, whether to start a
    // refresh, and returns what this caller should do (take the current token, or wait).
    const decide = (now: number) =>
      SynchronizedRef.modifyEffect(
        state,
        (current): Effect.Effect<readonly [Effect.Effect<AccessToken, HttpError>, State]> => {
          const cached = current.cached
          if (cached !== undefined && now < cached.softAt) {
            return Effect.succeed([Effect.succeed(cached.token), current])
          }
          if (cached !== undefined && now < cached.hardAt) {
            if (current.refreshing !== undefined) return Effect.succeed([Effect.succeed(cached.token), current])
            return Effect.map(
              startRefresh(current, "soft-window"),
              ([, next]) => [Effect.succeed(cached.token), next] as const
            )
          }
          if (current.refreshing !== undefined) return Effect.succeed([Deferred.await(current.refreshing), current])
          const reason: RefreshReason = cached === undefined
            ? "empty"
            : now < cached.token.expiresAt
            ? "hard-window"
            : "expired"
          return Effect.map(
            startRefresh(current, reason),
            ([deferred, next]) => [Deferred.await(deferred), next] as const
          )
        }
      )

    const get: Effect.Effect<AccessToken, HttpError> = Effect.flatMap(
      Clock.currentTimeMillis,
      (now) =>
        Effect.flatMap(SynchronizedRef.get(state), (current) => {
          const cached = current.cached
          // Fast path: a fresh token, no lock taken.
          if (cached !== undefined && now < cached.softAt) return Effect.succeed(cached.token)
          return Effect.flatten(decide(now))
        })
    )

    const invalidate = (token: AccessToken): Effect.Effect<void> =>
      SynchronizedRef.update(
        state,
        (current) =>
          current.cached !== undefined && current.cached.token.generation === token.generation
            ? { ...current, cached: undefined }
            : current
      )

    return TokenService.of({ get, invalidate })
  }
)

/** The token cache, over the `HttpTransport` and `ClinicalConfig` the application provides. */
export const layer: Layer.Layer<TokenService, never, ClinicalConfig | HttpTransport> = Layer.scoped(TokenService, make)

/** A valid token from the `TokenService` in context. */
export const get: Effect.Effect<AccessToken, HttpError, TokenService> = Effect.flatMap(
  TokenService,
  (service) => service.get
)

/** Drops `token` from the `TokenService` in context if it is still the cached one. */
export const invalidate = (token: AccessToken): Effect.Effect<void, never, TokenService> =>
  Effect.flatMap(TokenService, (service) => service.invalidate(token))
