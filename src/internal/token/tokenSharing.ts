/**
 * How an instance gets a new token when a token store may hold one for the whole fleet: the pure
 * decisions first, then their interpreter, which `TokenService` calls where it would otherwise
 * request a token itself.
 *
 * 1. Read the store. A stored token this instance is not replacing (nor was just refused), outside
 *    its hard window, is adopted: no token request. Tokens are compared by fingerprint.
 * 2. Else, if nobody holds the lease, take it, read again (somebody may have published meanwhile),
 *    request a token, and publish it with a compare-and-set on the generation read: a publisher
 *    who was paused past its lease loses to the newer token, and adopts it.
 * 3. Else another instance is fetching: wait for its publication, polling with jitter, taking the
 *    lease if it is given back without one. The wait restarts whenever the lease changes hands;
 *    after a whole lease's length with the same holder, ask alone, and offer the token to the store.
 *    A lease that changes hands again and again without a token published (holders failing one
 *    after another, or someone rewriting it) is waited on for {@link CHURN_MILLIS} at most; then
 *    the instance goes on as when the store fails (alone, or it fails).
 *
 * The store holds a value no instance can read (a generation that is not a number, a token no
 * instance wrote): the leaseholder replaces it with its publication, and says so. A token sealed
 * with another key, with time left, is another matter: see {@link unreadableFailure}.
 *
 * The store fails (no answer within its timeout, an error, another key's token): the failure is
 * counted, logged once per outage, the store is left alone for its `retryAfter`, and the refresh
 * goes on alone (`onUnavailable: "local"`) or fails (`"fail"`). A token obtained before the store
 * failed is kept: a failure of the store never costs a second token request. What the instance
 * owes the store (a lease to give back, a token to publish) is still attempted, in the background.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Metric from "effect/Metric"
import * as Random from "effect/Random"
import type * as Redacted from "effect/Redacted"
import { throttleOf } from "../../../core/token/tokenCache.js"
import { type HttpError, RateLimited, ServerError, TokenStoreError } from "../../ClinicalError.js"
import type * as TokenStore from "../../TokenStore.js"
import * as Telemetry from "../observability/telemetry.js"
import { scrub } from "../redaction/redaction.js"
import type { IssuedToken } from "./tokenRequest.js"
import { MAX_PAUSE_MILLIS } from "./tokenStorePort.js"

/** What the decisions need to know of the client's settings. */
export interface Limits {
  /** The hard window's setting (ms): a stored token closer to its expiry than the window is not adopted. */
  readonly hardWindowMillis: number
  /** The cap on a token's lifetime (ms), applied to a stored one as to one from the server. */
  readonly maxLifetimeMillis: number
  /** The cap on a pause (ms, `maxRetryAfter`), applied to one another instance recorded as to a `Retry-After`. */
  readonly maxPauseMillis: number
}

/** No token to pass over: the fleet's newer token is taken whatever it is. */
const AVOID_NONE: ReadonlyArray<string> = []

/**
 * The stored token as this instance would use it, or `undefined` when it should not: none is
 * stored, it is one of the tokens to `avoid` (by fingerprint: the one being replaced, the one just
 * refused), or it is in its hard window. `readAt` is the local time the read was sent: the time
 * left counts from there.
 */
export const adoptable = (
  snapshot: TokenStore.Snapshot,
  avoid: ReadonlyArray<string>,
  readAt: number,
  limits: Limits
): IssuedToken | undefined => {
  const stored = snapshot.stored
  if (stored === undefined || avoid.includes(stored.fingerprint)) return undefined
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

/**
 * The failure a read stands for when the store holds a token this instance cannot open but that
 * may be another key's, with no more time left than a token of this instance could have: other
 * instances are at work with another key (a fleet misconfigured, or a key being rolled out), and
 * replacing their token would only make them replace this one's. Anything else unreadable (a
 * value no instance wrote, a generation that is not a number, a seal that would outlive any
 * token) is no one's: it is not a failure, and the next publication replaces it.
 */
export const unreadableFailure = (snapshot: TokenStore.Snapshot, limits: Limits): TokenStoreError | undefined => {
  const unreadable = snapshot.unreadable
  return unreadable !== undefined && unreadable.sealedOtherwise &&
      unreadable.remainingMillis <= limits.maxLifetimeMillis
    ? new TokenStoreError({ operation: "token", reason: "Unreadable", detail: unreadable.reason })
    : undefined
}

/** What an instance does after reading the store. */
export type Step =
  | { readonly _tag: "Adopt"; readonly issued: IssuedToken }
  | { readonly _tag: "Paused"; readonly status: TokenStore.PauseStatus; readonly remainingMillis: number }
  | { readonly _tag: "Lease" }
  | { readonly _tag: "Wait"; readonly holder: string }

/**
 * After a read: adopt the stored token; else, while the token endpoint's pause runs (another
 * instance was told to wait), ask nothing, for at most `maxPauseMillis` before reading again; else
 * take the lease if it is free; else wait for its holder.
 */
export const afterRead = (
  snapshot: TokenStore.Snapshot,
  avoid: ReadonlyArray<string>,
  readAt: number,
  limits: Limits
): Step => {
  const issued = adoptable(snapshot, avoid, readAt, limits)
  if (issued !== undefined) return { _tag: "Adopt", issued }
  const paused = snapshot.paused
  if (paused !== undefined && paused.remainingMillis <= MAX_PAUSE_MILLIS) {
    return {
      _tag: "Paused",
      status: paused.status,
      remainingMillis: Math.min(paused.remainingMillis, limits.maxPauseMillis)
    }
  }
  return snapshot.lease === undefined ? { _tag: "Lease" } : { _tag: "Wait", holder: snapshot.lease }
}

/**
 * The pause a failed token request asks the fleet for: a 429, or a 503 with `Retry-After`, as an
 * instance remembers one for itself (`TokenCache.throttleOf`); else none.
 */
export const pauseOf = (
  error: HttpError
): { readonly status: TokenStore.PauseStatus; readonly millis: number } | undefined => {
  const throttle = throttleOf(error, 0)
  return throttle === undefined || throttle.until <= 0
    ? undefined
    : { status: throttle.error.status === 429 ? 429 : 503, millis: throttle.until }
}

/** The error a token request fails with while the fleet's pause runs: the endpoint's own, counting down. */
export const pausedError = (
  status: TokenStore.PauseStatus,
  remainingMillis: number,
  url: string
): RateLimited | ServerError => {
  const fields = { operation: "token", method: "POST", url, status, retryAfterMillis: remainingMillis } as const
  return status === 429 ? new RateLimited(fields) : new ServerError(fields)
}

/** Whom an instance is waiting for, since when, and how the lease has changed hands meanwhile. */
export interface Waiting {
  readonly holder: string
  readonly since: number
  /** Since when the lease has been changing hands in this wait (its first change seen), and how often. */
  readonly churn: { readonly since: number; readonly changes: number } | undefined
}

/** What an instance does after finding another instance with the lease. */
export type WaitStep =
  | { readonly _tag: "Poll"; readonly waiting: Waiting }
  /** One holder for a whole lease: it will not publish; ask alone, and offer the token. */
  | { readonly _tag: "AskAlone" }
  /** The lease changing hands without a token published, for too long: go on as when the store fails. */
  | { readonly _tag: "Churned"; readonly changes: number; readonly millis: number }

/**
 * Most changes of hands a wait takes in its stride: one is a holder that died replaced by another,
 * which then has its whole lease to publish. From the second on, the lease is churning.
 */
export const CHURN_CHANGES = 2

/**
 * Longest an instance waits, from the lease's first change of hands, on a lease that keeps
 * changing hands without a token being published: then it gives up (else a lease re-taken by a
 * new holder every 100 ms would hold every call to its deadline).
 */
export const CHURN_MILLIS = 1000

/**
 * The wait after finding `holder` with the lease at `now`: it starts again when the lease changed
 * hands (a new holder has its whole lease to publish), is over after a whole lease's length with
 * one holder (ask alone), and is given up a {@link CHURN_MILLIS} after the lease first changed
 * hands once it has changed hands {@link CHURN_CHANGES} times.
 */
export const waitStep = (
  waiting: Waiting | undefined,
  holder: string,
  now: number,
  leaseMillis: number
): WaitStep => {
  if (waiting === undefined) return { _tag: "Poll", waiting: { holder, since: now, churn: undefined } }
  const changed = waiting.holder !== holder
  const churn = changed
    ? { since: waiting.churn?.since ?? now, changes: (waiting.churn?.changes ?? 0) + 1 }
    : waiting.churn
  if (churn !== undefined && churn.changes >= CHURN_CHANGES && now - churn.since >= CHURN_MILLIS) {
    return { _tag: "Churned", changes: churn.changes, millis: now - churn.since }
  }
  if (changed) return { _tag: "Poll", waiting: { holder, since: now, churn } }
  return now - waiting.since >= leaseMillis ? { _tag: "AskAlone" } : { _tag: "Poll", waiting }
}

/** Longest an operation waits for the store's client to make its first connection, before its own timeout. */
export const FIRST_CONNECTION_MILLIS = 2_000

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
  /** The token endpoint's URL, for the error of a request the fleet's pause keeps from going. */
  readonly url: string
  /** Runs work the refresh does not wait for (what the instance owes the store), in the client's scope. */
  readonly background: (effect: Effect.Effect<void>) => Effect.Effect<void>
  /** Secrets a store's error text must not carry (the ApplicationId). */
  readonly secrets: ReadonlyArray<Redacted.Redacted<string>>
}

/** A client's way to new tokens through a store. */
export interface Sharing {
  /** A new token; the store's tokens with a fingerprint in `avoid` are not taken. */
  readonly obtain: (avoid: ReadonlyArray<string>) => Effect.Effect<IssuedToken, HttpError>
  /** Drops the token with this fingerprint from the store if it is still there; a failure only counts and logs. */
  readonly invalidate: (fingerprint: string) => Effect.Effect<void>
}

/** A read of the store, and the local time it was sent. */
interface Read {
  readonly snapshot: TokenStore.Snapshot
  readonly readAt: number
}

/** Says, as the leaseholder about to replace it, what the store held that no instance can read. */
const repairing = (snapshot: TokenStore.Snapshot): Effect.Effect<void> =>
  snapshot.unreadable === undefined
    ? Effect.void
    : Effect.zipRight(
      Metric.increment(Telemetry.tokenStoreRepairs),
      Effect.logWarning("token store holds a value no instance can read; this instance replaces it").pipe(
        Effect.annotateLogs({ reason: snapshot.unreadable.reason })
      )
    )

const adopted = (issued: IssuedToken) => Effect.as(Metric.increment(Telemetry.tokensFromStore), issued)

/**
 * The interpreter of the decisions above over a store, one method per step (a class rather than
 * closures over the store's state: each step has a name).
 */
class Sharer implements Sharing {
  private readonly store: TokenStore.Service
  private readonly lease: number
  // While the store is left alone after a failure, and whether its outage was logged.
  private pausedUntil = 0
  private down = false
  private readonly release: Effect.Effect<void>
  private readonly read: Effect.Effect<Read, TokenStoreError>
  /** Waits (a bounded while) for a store client still making its first connection. */
  private readonly firstConnection: Effect.Effect<void>
  /** One token request; a pause it is told to make is recorded for the fleet. */
  private readonly request: Effect.Effect<IssuedToken, HttpError>
  /** The same, by the leaseholder: the pause is owed to the fleet, as the lease is (see {@link sharePause}). */
  private readonly leaseholderRequest: Effect.Effect<IssuedToken, HttpError>

  constructor(private readonly options: Options) {
    const { key, limits, owner, store } = options
    this.store = store
    this.lease = leaseMillis(options.tokenTimeoutMillis, store.timeoutMillis)
    this.release = Effect.ignore(this.guarded(store.releaseLease(key, owner), true))
    this.read = Effect.flatMap(Clock.currentTimeMillis, (readAt) =>
      Effect.map(
        this.guarded(Effect.flatMap(store.read(key), (snapshot) => {
          const failed = unreadableFailure(snapshot, limits)
          return failed === undefined ? Effect.succeed(snapshot) : Effect.fail(failed)
        })),
        (snapshot) => ({ snapshot, readAt })
      ))
    this.firstConnection = store.ready === undefined
      ? Effect.void
      : Effect.timeout(store.ready, FIRST_CONNECTION_MILLIS).pipe(Effect.ignore)
    this.request = Effect.tapError(options.request, (error) => this.sharePause(error, false))
    this.leaseholderRequest = Effect.tapError(options.request, (error) => this.sharePause(error, true))
  }

  obtain(avoid: ReadonlyArray<string>): Effect.Effect<IssuedToken, HttpError> {
    return this.shared(avoid, 0, undefined)
  }

  invalidate(fingerprint: string): Effect.Effect<void> {
    return Effect.ignore(this.guarded(this.store.invalidate(this.options.key, fingerprint)))
  }

  /**
   * The token endpoint asked this instance for a pause: the fleet is told before the lease is given
   * back, so that no instance waiting for it asks in the meantime (one store operation, bounded by
   * its timeout). `owed` by a leaseholder, as giving the lease back is: a store left alone after a
   * failure is asked even so, or the others would find the lease free and no pause.
   */
  private sharePause(error: HttpError, owed: boolean): Effect.Effect<void> {
    const pause = pauseOf(error)
    const record = this.store.pause
    if (pause === undefined || record === undefined) return Effect.void
    return Effect.ignore(this.guarded(record(this.options.key, pause.status, pause.millis), owed))
  }

  private failure(error: TokenStoreError): Effect.Effect<void> {
    return Effect.clockWith((clock) => {
      this.pausedUntil = clock.unsafeCurrentTimeMillis() + this.store.retryAfterMillis
      const counted = Metric.increment(Metric.tagged(Telemetry.tokenStoreFailures, "reason", error.reason))
      if (this.down) return counted
      this.down = true
      return Effect.zipRight(
        counted,
        Effect.logWarning(
          this.store.onUnavailable === "local"
            ? "token store unavailable; this instance gets its own tokens until it is back"
            : "token store unavailable; token refreshes fail until it is back"
        ).pipe(Effect.annotateLogs({ reason: error.reason, detail: error.detail }))
      )
    })
  }

  private recovered(): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (!this.down) return Effect.void
      this.down = false
      return Effect.logInfo("token store available again")
    })
  }

  private bounded<A>(operation: Effect.Effect<A, TokenStoreError>): Effect.Effect<A, TokenStoreError> {
    const timeoutMillis = this.store.timeoutMillis
    return (Number.isFinite(timeoutMillis)
      ? Effect.timeoutFail(operation, {
        duration: timeoutMillis,
        onTimeout: () =>
          new TokenStoreError({ operation: "token", reason: "Timeout", detail: `no answer within ${timeoutMillis} ms` })
      })
      : operation).pipe(
        // A store's error text is foreign: the ApplicationId must not ride on it.
        Effect.mapError((error) =>
          new TokenStoreError({ ...error, detail: scrub(error.detail, this.options.secrets) })
        ),
        Effect.tapBoth({ onFailure: (error) => this.failure(error), onSuccess: () => this.recovered() })
      )
  }

  /**
   * One store operation: bounded by the timeout, its failure counted; skipped while the store is
   * left alone after a failure, unless it is owed (a lease to give back, a token to publish).
   */
  private guarded<A>(operation: Effect.Effect<A, TokenStoreError>, owed = false): Effect.Effect<A, TokenStoreError> {
    return Effect.clockWith((clock) =>
      !owed && clock.unsafeCurrentTimeMillis() < this.pausedUntil
        ? Effect.fail(
          new TokenStoreError({
            operation: "token",
            reason: "Unavailable",
            detail: `left alone for ${this.store.retryAfterMillis} ms after a failure`
          })
        )
        // A client still making its first connection (an instance calling at start-up) is waited
        // for before the operation's timeout starts: else every instance would find the store down
        // and fetch a token of its own. (Nothing to wait for without `ready`.)
        : Effect.zipRight(this.firstConnection, this.bounded(operation))
    )
  }

  /**
   * Publishes a token this instance fetched, if the last generation is still `expected` (and gives
   * its lease back either way). Published: the token with its generation. Lost: the newer token,
   * which is the fleet's. The store failing: the token as it is.
   */
  private publish(issued: IssuedToken, expected: number): Effect.Effect<IssuedToken, TokenStoreError> {
    return Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const ttlMillis = issued.sentAt + issued.lifetimeMillis - now
      // Stryker disable next-line ConditionalExpression,EqualityOperator: unreachable in tests, a token request times out (10 s) long before a token's lifetime passes; kept for a store that refuses a TTL of 0
      if (ttlMillis <= 0) return Effect.as(this.release, issued)
      const entry = {
        token: issued.token,
        lifetimeMillis: issued.lifetimeMillis,
        serverLifetimeMillis: issued.serverLifetimeMillis,
        serverClockSkewMillis: issued.serverClockSkewMillis
      }
      return Effect.flatMap(
        this.guarded(this.store.publish(this.options.key, expected, entry, ttlMillis, this.options.owner), true),
        (generation) =>
          generation !== undefined
            ? Effect.succeed({ ...issued, storeGeneration: generation })
            // Another instance published while this one fetched (its lease ran out): theirs is the fleet's.
            : Effect.map(
              Effect.either(this.read),
              (found) =>
                (Either.isRight(found)
                  ? adoptable(found.right.snapshot, AVOID_NONE, found.right.readAt, this.options.limits)
                  : undefined) ?? issued
            )
      )
    })
  }

  /** The token of this instance's own, for a refresh the store could not serve. */
  private alone(error: TokenStoreError, expected?: number): Effect.Effect<IssuedToken, HttpError> {
    const { background } = this.options
    if (this.store.onUnavailable === "fail") {
      return Effect.zipRight(expected === undefined ? Effect.void : background(this.release), Effect.fail(error))
    }
    // Published in the background, if it can be: the fleet may still take it.
    return expected === undefined
      ? this.request
      : Effect.flatMap(
        this.request,
        (issued) => Effect.as(background(Effect.ignore(this.publish(issued, expected))), issued)
      )
  }

  private asLeaseholder(avoid: ReadonlyArray<string>, first: Read): Effect.Effect<IssuedToken, HttpError> {
    // A read that fails now changes nothing: the first one still fences the publication.
    return Effect.flatMap(Effect.orElseSucceed(this.read, () => first), ({ readAt, snapshot }) => {
      const issued = adoptable(snapshot, avoid, readAt, this.options.limits)
      if (issued !== undefined) return Effect.zipRight(this.release, adopted(issued))
      return repairing(snapshot).pipe(
        Effect.zipRight(Effect.onError(this.leaseholderRequest, () => this.release)),
        Effect.flatMap((token) =>
          Effect.catchAll(
            this.publish(token, snapshot.generation),
            () => Effect.as(this.options.background(this.release), token)
          )
        )
      )
    })
  }

  /** Reads, and acts on what it finds; `waiting` says whom this instance waits for, since when. */
  private shared(
    avoid: ReadonlyArray<string>,
    poll: number,
    waiting: Waiting | undefined
  ): Effect.Effect<IssuedToken, HttpError> {
    return Effect.flatMap(Effect.either(this.read), (found) => {
      if (Either.isLeft(found)) return this.alone(found.left)
      const { readAt, snapshot } = found.right
      const step = afterRead(snapshot, avoid, readAt, this.options.limits)
      switch (step._tag) {
        case "Adopt":
          return adopted(step.issued)
        case "Paused":
          return Effect.zipRight(
            Metric.increment(Telemetry.throttledFastFails),
            Effect.fail(pausedError(step.status, step.remainingMillis, this.options.url))
          )
        case "Lease":
          return Effect.flatMap(
            Effect.either(this.guarded(this.store.acquireLease(this.options.key, this.options.owner, this.lease))),
            (acquired) =>
              Either.isLeft(acquired)
                // The lease may have been taken even so (a command that timed out but ran).
                ? this.alone(acquired.left, snapshot.generation)
                : acquired.right
                ? this.asLeaseholder(avoid, found.right)
                // Another instance took it first: a new holder, which the next read finds.
                : this.shared(avoid, poll, waiting)
          )
        case "Wait":
          return this.waitFor(step.holder, avoid, poll, waiting, found.right)
      }
    })
  }

  /** Another instance holds the lease (`holder`): wait for its token, within bounds. */
  private waitFor(
    holder: string,
    avoid: ReadonlyArray<string>,
    poll: number,
    waiting: Waiting | undefined,
    { readAt, snapshot }: Read
  ): Effect.Effect<IssuedToken, HttpError> {
    const step = waitStep(waiting, holder, readAt, this.lease)
    switch (step._tag) {
      case "Churned": {
        const error = new TokenStoreError({
          operation: "token",
          reason: "Timeout",
          detail: `the lease changed hands ${step.changes} times in ${step.millis} ms without a token published`
        })
        // Counted and logged as a failure of the store, which is then left alone for a while.
        return Effect.zipRight(this.failure(error), this.alone(error, snapshot.generation))
      }
      case "AskAlone":
        return Effect.flatMap(
          this.request,
          (issued) => Effect.orElseSucceed(this.publish(issued, snapshot.generation), () => issued)
        )
      case "Poll":
        return Random.next.pipe(
          Effect.flatMap((random) => Effect.sleep(pollDelayMillis(poll, random))),
          Effect.zipRight(Effect.suspend(() => this.shared(avoid, poll + 1, step.waiting)))
        )
    }
  }
}

/** The interpreter of the decisions above over a store. */
export const make = (options: Options): Sharing => new Sharer(options)
