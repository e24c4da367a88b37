/**
 * How an instance gets a new token when a token store may hold one for the whole fleet: the pure
 * decisions first, then their interpreter, which `TokenService` calls where it would otherwise
 * request a token itself.
 *
 * 1. Read the store. A token there that is not the one this instance holds, and that is outside
 *    its hard window, is adopted: no token request.
 * 2. Else, if nobody holds the lease, take it, read again (somebody may have published meanwhile),
 *    request a token, and publish it with a compare-and-set on the generation read: a publisher
 *    who was paused past its lease loses to the newer token, and adopts it.
 * 3. Else another instance is fetching: wait for its publication, polling with jitter, taking the
 *    lease if it is given back without one; after a lease's length, stop waiting and ask alone.
 *
 * The store fails (no answer within its timeout, an error, a value it cannot read): the failure is
 * counted, logged once per outage, the store is left alone for its `retryAfter`, and the refresh
 * goes on alone (`onUnavailable: "local"`) or fails (`"fail"`). A token obtained before the store
 * failed is kept, unpublished: a failure of the store never costs a second token request.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Random from "effect/Random"
import type * as Redacted from "effect/Redacted"
import { type HttpError, TokenStoreError } from "../ClinicalError.js"
import type * as TokenStore from "../TokenStore.js"
import { scrub } from "./redaction.js"
import * as Telemetry from "./telemetry.js"
import type { IssuedToken } from "./tokenRequest.js"

/** What the decisions need to know of the client's settings. */
export interface Limits {
  /** The hard window's setting (ms): a stored token closer to its expiry than the window is not adopted. */
  readonly hardWindowMillis: number
  /** The cap on a token's lifetime (ms), applied to a stored one as to one from the server. */
  readonly maxLifetimeMillis: number
}

/**
 * The stored token as this instance would use it, or `undefined` when it should not: none is
 * stored, it is the generation this instance holds (`held`, the one it is replacing), or it is in
 * its hard window. `readAt` is the local time the read was sent: the time left counts from there.
 */
export const adoptable = (
  snapshot: TokenStore.Snapshot,
  held: number | undefined,
  readAt: number,
  limits: Limits
): IssuedToken | undefined => {
  const stored = snapshot.stored
  if (stored === undefined || stored.generation === held) return undefined
  const lifetimeMillis = Math.min(stored.entry.lifetimeMillis, limits.maxLifetimeMillis)
  const remainingMillis = Math.min(stored.remainingMillis, lifetimeMillis)
  if (remainingMillis <= Math.min(limits.hardWindowMillis, lifetimeMillis / 10)) return undefined
  return {
    token: stored.entry.token,
    sentAt: readAt + remainingMillis - lifetimeMillis,
    lifetimeMillis,
    serverLifetimeMillis: stored.entry.serverLifetimeMillis,
    serverClockSkewMillis: stored.entry.serverClockSkewMillis,
    source: "store",
    storeGeneration: stored.generation
  }
}

/** What an instance does after reading the store. */
export type Step =
  | { readonly _tag: "Adopt"; readonly issued: IssuedToken }
  | { readonly _tag: "Lease" }
  | { readonly _tag: "Wait" }

/** After a read: adopt the stored token; else take the lease if it is free; else wait. */
export const afterRead = (
  snapshot: TokenStore.Snapshot,
  held: number | undefined,
  readAt: number,
  limits: Limits
): Step => {
  const issued = adoptable(snapshot, held, readAt, limits)
  if (issued !== undefined) return { _tag: "Adopt", issued }
  return snapshot.leased ? { _tag: "Wait" } : { _tag: "Lease" }
}

/** The pause before poll number `poll` (0 first) for another instance's publication: 25 ms doubling to 400, half jittered. */
export const pollDelayMillis = (poll: number, random: number): number => {
  const base = Math.min(400, 25 * 2 ** poll)
  return Math.ceil(base / 2 + (random * base) / 2)
}

/**
 * How long a lease lasts: longer than the token request it covers (its timeout), with room for the
 * store's read before it and the publication after it.
 */
export const leaseMillis = (tokenTimeoutMillis: number, storeTimeoutMillis: number): number =>
  tokenTimeoutMillis + 2 * (Number.isFinite(storeTimeoutMillis) ? storeTimeoutMillis : 0) + 1000

/** What the interpreter needs. */
export interface Options {
  readonly store: TokenStore.Service
  /** The store's name for this client's token (a hash, never the ApplicationId). */
  readonly key: string
  /** This instance's id in the lease. */
  readonly owner: string
  readonly limits: Limits
  readonly tokenTimeoutMillis: number
  /** One token request to the token endpoint. */
  readonly request: Effect.Effect<IssuedToken, HttpError>
  /** Secrets a store's error text must not carry (the ApplicationId). */
  readonly secrets: ReadonlyArray<Redacted.Redacted<string>>
}

/** A client's way to new tokens through a store. */
export interface Sharing {
  /** A new token, replacing generation `held` of the store (if the token held is in it). */
  readonly obtain: (held: number | undefined) => Effect.Effect<IssuedToken, HttpError>
  /** Drops generation `generation` from the store if it is still there; a failure only counts and logs. */
  readonly invalidate: (generation: number) => Effect.Effect<void>
}

/** The interpreter of the decisions above over a store. */
export const make = (options: Options): Sharing => {
  const { key, limits, owner, request, store } = options
  const lease = leaseMillis(options.tokenTimeoutMillis, store.timeoutMillis)
  let pausedUntil = 0
  let down = false

  const failure = (error: TokenStoreError): Effect.Effect<void> =>
    Effect.clockWith((clock) => {
      pausedUntil = clock.unsafeCurrentTimeMillis() + store.retryAfterMillis
      const counted = Metric.increment(Metric.tagged(Telemetry.tokenStoreFailures, "reason", error.reason))
      if (down) return counted
      down = true
      return Effect.zipRight(
        counted,
        Effect.logWarning(
          store.onUnavailable === "local"
            ? "token store unavailable; this instance gets its own tokens until it is back"
            : "token store unavailable; token refreshes fail until it is back"
        ).pipe(Effect.annotateLogs({ reason: error.reason, detail: error.detail }))
      )
    })

  const recovered = Effect.suspend(() => {
    if (!down) return Effect.void
    down = false
    return Effect.logInfo("token store available again")
  })

  /** One store operation: skipped while the store is left alone, bounded by its timeout, its failure counted. */
  const guarded = <A>(operation: Effect.Effect<A, TokenStoreError>): Effect.Effect<A, TokenStoreError> =>
    Effect.clockWith((clock) => {
      if (clock.unsafeCurrentTimeMillis() < pausedUntil) {
        return Effect.fail(
          new TokenStoreError({
            operation: "token",
            reason: "Unavailable",
            detail: `left alone for ${store.retryAfterMillis} ms after a failure`
          })
        )
      }
      const bounded = Number.isFinite(store.timeoutMillis)
        ? Effect.timeoutFail(operation, {
          duration: store.timeoutMillis,
          onTimeout: () =>
            new TokenStoreError({
              operation: "token",
              reason: "Timeout",
              detail: `no answer within ${store.timeoutMillis} ms`
            })
        })
        : operation
      return bounded.pipe(
        // A store's error text is foreign: the ApplicationId must not ride on it.
        Effect.mapError((error) => new TokenStoreError({ ...error, detail: scrub(error.detail, options.secrets) })),
        Effect.tapBoth({ onFailure: failure, onSuccess: () => recovered })
      )
    })

  const read = Effect.flatMap(
    Clock.currentTimeMillis,
    (readAt) => Effect.map(guarded(store.read(key)), (snapshot) => ({ snapshot, readAt }))
  )

  const adopted = (issued: IssuedToken) => Effect.as(Metric.increment(Telemetry.tokensFromStore), issued)

  /** A token that is ours to keep: published, or (the store failed, or is gone) kept unpublished. */
  const publish = (issued: IssuedToken, expected: number): Effect.Effect<IssuedToken> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const ttlMillis = issued.sentAt + issued.lifetimeMillis - now
      if (ttlMillis <= 0) return Effect.as(Effect.ignore(guarded(store.releaseLease(key, owner))), issued)
      const entry = {
        token: issued.token,
        lifetimeMillis: issued.lifetimeMillis,
        serverLifetimeMillis: issued.serverLifetimeMillis,
        serverClockSkewMillis: issued.serverClockSkewMillis
      }
      return guarded(store.publish(key, expected, entry, ttlMillis, owner)).pipe(
        Effect.flatMap((generation) =>
          generation !== undefined
            ? Effect.succeed({ ...issued, storeGeneration: generation })
            // Another instance published while this one fetched (its lease ran out): theirs is the fleet's.
            : Effect.map(read, ({ readAt, snapshot }) => adoptable(snapshot, undefined, readAt, limits) ?? issued)
        ),
        Effect.orElseSucceed(() => issued)
      )
    })

  const asLeaseholder = (held: number | undefined) =>
    Effect.flatMap(read, ({ readAt, snapshot }) => {
      const issued = adoptable(snapshot, held, readAt, limits)
      if (issued !== undefined) return Effect.as(Effect.ignore(guarded(store.releaseLease(key, owner))), issued)
      return Effect.flatMap(
        Effect.onError(request, () => Effect.ignore(guarded(store.releaseLease(key, owner)))),
        (token) => publish(token, snapshot.generation)
      )
    })

  /** Reads, and acts on what it finds; `waitingSince` is when this instance began to wait for another. */
  const shared = (
    held: number | undefined,
    poll: number,
    waitingSince: number | undefined
  ): Effect.Effect<IssuedToken, HttpError> =>
    Effect.flatMap(read, ({ readAt, snapshot }) => {
      const step = afterRead(snapshot, held, readAt, limits)
      switch (step._tag) {
        case "Adopt":
          return adopted(step.issued)
        case "Lease":
          return Effect.flatMap(
            guarded(store.acquireLease(key, owner, lease)),
            (acquired) => acquired ? asLeaseholder(held) : shared(held, poll, waitingSince ?? readAt)
          )
        case "Wait": {
          const since = waitingSince ?? readAt
          // The lease ends within its length, so a publication or a free lease comes by then; if
          // neither did (holders failing one after another), this instance asks alone.
          if (readAt - since >= lease) return request
          return Random.next.pipe(
            Effect.flatMap((random) => Effect.sleep(pollDelayMillis(poll, random))),
            Effect.zipRight(Effect.suspend(() => shared(held, poll + 1, since)))
          )
        }
      }
    })

  return {
    obtain: (held) =>
      Effect.catchAll(
        shared(held, 0, undefined),
        (error) => error._tag === "TokenStoreError" && store.onUnavailable === "local" ? request : Effect.fail(error)
      ),
    invalidate: (generation) => Effect.ignore(guarded(store.invalidate(key, generation)))
  }
}
