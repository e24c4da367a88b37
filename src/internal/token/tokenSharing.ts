/**
 * How an instance gets a new token when a token store may hold one for the whole fleet: the
 * interpreter of the core's decisions (core/token/tokenSharing.ts: reading, adopting, the lease,
 * waiting for a peer's publication, repairs, the store's outages), which `TokenService` calls where
 * it would otherwise request a token itself.
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
import * as Core from "../../../core/token/tokenSharing.js"
import { type HttpError, type RateLimited, type ServerError, TokenStoreError } from "../../ClinicalError.js"
import type * as TokenStore from "../../TokenStore.js"
import { fromCore } from "../fromCore.js"
import * as Telemetry from "../observability/telemetry.js"
import { scrub } from "../redaction/redaction.js"
import type { IssuedToken } from "./tokenRequest.js"

export {
  afterRead,
  CHURN_CHANGES,
  CHURN_MILLIS,
  FIRST_CONNECTION_MILLIS,
  leaseMillis,
  pauseOf,
  pollDelayMillis,
  waitStep
} from "../../../core/token/tokenSharing.js"

export type { Limits, Waiting, WaitStep } from "../../../core/token/tokenSharing.js"

/** What an instance does after reading the store. */
export type Step = Core.Step<Redacted.Redacted<string>>

/** The stored token as this instance would use it, or `undefined` when it should not (the core's `adoptable`). */
export const adoptable: (
  snapshot: TokenStore.Snapshot,
  avoid: ReadonlyArray<string>,
  readAt: number,
  limits: Core.Limits
) => IssuedToken | undefined = Core.adoptable

/** The failure a read stands for when the store holds another key's token (the core's `unreadableFailure`). */
export const unreadableFailure = (snapshot: TokenStore.Snapshot, limits: Core.Limits): TokenStoreError | undefined => {
  const failure = Core.unreadableFailure(snapshot, limits)
  return failure === undefined ? undefined : fromCore(failure)
}

/** The error a token request fails with while the fleet's pause runs: the endpoint's own, counting down. */
export const pausedError = (
  status: TokenStore.PauseStatus,
  remainingMillis: number,
  url: string
): RateLimited | ServerError => fromCore(Core.pausedError(status, remainingMillis, url))

/** What the interpreter needs. */
export interface Options {
  readonly store: TokenStore.Service
  /** The store's name for this client's token (a hash, never the ApplicationId). */
  readonly key: string
  /** This instance's id in the lease. */
  readonly owner: string
  readonly limits: Core.Limits
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
      Effect.logWarning(Core.REPAIRING).pipe(
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
  private readonly outage: Core.Outage
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
    this.lease = Core.leaseMillis(options.tokenTimeoutMillis, store.timeoutMillis)
    this.outage = new Core.Outage(store.retryAfterMillis)
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
      : Effect.timeout(store.ready, Core.FIRST_CONNECTION_MILLIS).pipe(Effect.ignore)
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
    const pause = Core.pauseOf(error)
    const record = this.store.pause
    if (pause === undefined || record === undefined) return Effect.void
    return Effect.ignore(this.guarded(record(this.options.key, pause.status, pause.millis), owed))
  }

  private failure(error: TokenStoreError): Effect.Effect<void> {
    return Effect.clockWith((clock) => {
      const counted = Metric.increment(Metric.tagged(Telemetry.tokenStoreFailures, "reason", error.reason))
      if (!this.outage.failed(clock.unsafeCurrentTimeMillis())) return counted
      return Effect.zipRight(
        counted,
        Effect.logWarning(Core.outageMessage(this.store.onUnavailable)).pipe(
          Effect.annotateLogs({ reason: error.reason, detail: error.detail })
        )
      )
    })
  }

  private recovered(): Effect.Effect<void> {
    return Effect.suspend(() => {
      return this.outage.recovered() ? Effect.logInfo(Core.RECOVERED) : Effect.void
    })
  }

  private bounded<A>(operation: Effect.Effect<A, TokenStoreError>): Effect.Effect<A, TokenStoreError> {
    const timeoutMillis = this.store.timeoutMillis
    return (Number.isFinite(timeoutMillis)
      ? Effect.timeoutFail(operation, {
        duration: timeoutMillis,
        onTimeout: () => fromCore(Core.timedOut(timeoutMillis))
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
      !owed && this.outage.leftAlone(clock.unsafeCurrentTimeMillis())
        ? Effect.fail(fromCore(Core.leftAlone(this.store.retryAfterMillis)))
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
      const ttlMillis = Core.publishTtlMillis(issued, now)
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
                  ? adoptable(found.right.snapshot, Core.AVOID_NONE, found.right.readAt, this.options.limits)
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
    waiting: Core.Waiting | undefined
  ): Effect.Effect<IssuedToken, HttpError> {
    return Effect.flatMap(Effect.either(this.read), (found) => {
      if (Either.isLeft(found)) return this.alone(found.left)
      const { readAt, snapshot } = found.right
      const step = Core.afterRead(snapshot, avoid, readAt, this.options.limits)
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
    waiting: Core.Waiting | undefined,
    { readAt, snapshot }: Read
  ): Effect.Effect<IssuedToken, HttpError> {
    const step = Core.waitStep(waiting, holder, readAt, this.lease)
    switch (step._tag) {
      case "Churned": {
        const error = fromCore(Core.churned(step))
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
          Effect.flatMap((random) => Effect.sleep(Core.pollDelayMillis(poll, random))),
          Effect.zipRight(Effect.suspend(() => this.shared(avoid, poll + 1, step.waiting)))
        )
    }
  }
}

/** The interpreter of the decisions above over a store. */
export const make = (options: Options): Sharing => new Sharer(options)
