/**
 * How an instance gets a new token when a token store may hold one for the whole fleet: the
 * interpreter of the core's decisions (core/token/tokenSharing.ts: reading, adopting, the lease,
 * waiting for a peer's publication, repairs, the store's outages) with Effect 4, which
 * `TokenService` calls where it would otherwise request a token itself.
 *
 * The store fails (no answer within its timeout, an error, another key's token): the failure is
 * counted, logged once per outage, the store is left alone for its `retryAfter`, and the refresh
 * goes on alone (`onUnavailable: "local"`) or fails (`"fail"`). A token obtained before the store
 * failed is kept: a failure of the store never costs a second token request. What the instance
 * owes the store (a lease to give back, a token to publish) is still attempted, in the background.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Random from "effect/Random"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Metrics from "../../../../core/observability/metrics.js"
import * as Redaction from "../../../../core/redaction/redaction.js"
import * as Core from "../../../../core/token/tokenSharing.js"
import { type HttpError, TokenStoreError } from "../../ClinicalError.js"
import { fromCore } from "../fromCore.js"
import * as Telemetry from "../observability/telemetry.js"
import type { IssuedToken } from "./tokenRequest.js"
import type { Service, Snapshot } from "./tokenStorePort.js"

// The store's metrics, here beside their only user (the core's names and descriptions).

/** Failures of the shared token store, by `reason` (Timeout, Unavailable, Unreadable). */
const tokenStoreFailures = Telemetry.counter(Metrics.tokenStoreFailures)

/** Values in the shared token store no instance could read, replaced. */
const tokenStoreRepairs = Telemetry.counter(Metrics.tokenStoreRepairs)

/** Tokens taken from the shared token store instead of requested from the token endpoint. */
const tokensFromStore = Telemetry.counter(Metrics.tokensFromStore)

/** What the interpreter needs. */
export interface Options {
  readonly store: Service
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
  readonly snapshot: Snapshot
  readonly readAt: number
}

/** Says, as the leaseholder about to replace it, what the store held that no instance can read. */
const repairing = (snapshot: Snapshot): Effect.Effect<void> =>
  snapshot.unreadable === undefined
    ? Effect.void
    : Effect.andThen(
      Metric.update(tokenStoreRepairs, 1),
      Effect.logWarning(Core.REPAIRING).pipe(Effect.annotateLogs({ reason: snapshot.unreadable.reason }))
    )

const adopted = (issued: IssuedToken) => Effect.as(Metric.update(tokensFromStore, 1), issued)

/**
 * The interpreter of the core's decisions over a store, one method per step (a class rather than
 * closures over the store's state: each step has a name).
 */
class Sharer implements Sharing {
  private readonly store: Service
  private readonly lease: number
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
          const failed = Core.unreadableFailure(snapshot, limits)
          return failed === undefined ? Effect.succeed(snapshot) : Effect.fail(fromCore(failed))
        })),
        (snapshot) => ({ snapshot, readAt })
      ))
    this.firstConnection = store.ready === undefined
      ? Effect.void
      : Effect.ignore(Effect.timeout(store.ready, Core.FIRST_CONNECTION_MILLIS))
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
   * back, so that no instance waiting for it asks in the meantime. `owed` by a leaseholder, as
   * giving the lease back is: a store left alone after a failure is asked even so.
   */
  private sharePause(error: HttpError, owed: boolean): Effect.Effect<void> {
    const pause = Core.pauseOf(error)
    const record = this.store.pause
    if (pause === undefined || record === undefined) return Effect.void
    return Effect.ignore(this.guarded(record(this.options.key, pause.status, pause.millis), owed))
  }

  private failure(error: TokenStoreError): Effect.Effect<void> {
    return Effect.clockWith((clock) => {
      const counted = Metric.update(Metric.withAttributes(tokenStoreFailures, { reason: error.reason }), 1)
      if (!this.outage.failed(clock.currentTimeMillisUnsafe())) return counted
      return Effect.andThen(
        counted,
        Effect.logWarning(Core.outageMessage(this.store.onUnavailable)).pipe(
          Effect.annotateLogs({ reason: error.reason, detail: error.detail })
        )
      )
    })
  }

  private recovered(): Effect.Effect<void> {
    return Effect.suspend(() => this.outage.recovered() ? Effect.logInfo(Core.RECOVERED) : Effect.void)
  }

  private bounded<A>(operation: Effect.Effect<A, TokenStoreError>): Effect.Effect<A, TokenStoreError> {
    const timeoutMillis = this.store.timeoutMillis
    return (Number.isFinite(timeoutMillis)
      ? Effect.timeoutOrElse(operation, {
        duration: timeoutMillis,
        orElse: () => Effect.fail(fromCore(Core.timedOut(timeoutMillis)))
      })
      : operation).pipe(
        // A store's error text is foreign: the ApplicationId must not ride on it.
        Effect.mapError((error) =>
          new TokenStoreError({
            operation: error.operation,
            reason: error.reason,
            detail: Redaction.scrub(error.detail, this.options.secrets.map((secret) => Redacted.value(secret)))
          })
        ),
        Effect.tapError((error) => this.failure(error)),
        Effect.tap(() => this.recovered())
      )
  }

  /**
   * One store operation: bounded by the timeout, its failure counted; skipped while the store is
   * left alone after a failure, unless it is owed (a lease to give back, a token to publish).
   */
  private guarded<A>(operation: Effect.Effect<A, TokenStoreError>, owed = false): Effect.Effect<A, TokenStoreError> {
    return Effect.clockWith((clock) =>
      !owed && this.outage.leftAlone(clock.currentTimeMillisUnsafe())
        ? Effect.fail(fromCore(Core.leftAlone(this.store.retryAfterMillis)))
        // A client still making its first connection is waited for before the operation's timeout
        // starts: else every instance calling at start-up would fetch a token of its own.
        : Effect.andThen(this.firstConnection, this.bounded(operation))
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
              Effect.result(this.read),
              (found) =>
                (Result.isSuccess(found)
                  ? Core.adoptable(found.success.snapshot, Core.AVOID_NONE, found.success.readAt, this.options.limits)
                  : undefined) ?? issued
            )
      )
    })
  }

  /** The token of this instance's own, for a refresh the store could not serve. */
  private alone(error: TokenStoreError, expected?: number): Effect.Effect<IssuedToken, HttpError> {
    const { background } = this.options
    if (this.store.onUnavailable === "fail") {
      return Effect.andThen(expected === undefined ? Effect.void : background(this.release), Effect.fail(error))
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
      const issued = Core.adoptable(snapshot, avoid, readAt, this.options.limits)
      if (issued !== undefined) return Effect.andThen(this.release, adopted(issued))
      return repairing(snapshot).pipe(
        Effect.andThen(Effect.onError(this.leaseholderRequest, () => this.release)),
        Effect.flatMap((token) =>
          Effect.catch(
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
    return Effect.flatMap(Effect.result(this.read), (found) => {
      if (Result.isFailure(found)) return this.alone(found.failure)
      const { readAt, snapshot } = found.success
      const step = Core.afterRead(snapshot, avoid, readAt, this.options.limits)
      switch (step._tag) {
        case "Adopt":
          return adopted(step.issued)
        case "Paused":
          return Effect.andThen(
            Metric.update(Telemetry.throttledFastFails, 1),
            Effect.fail(fromCore(Core.pausedError(step.status, step.remainingMillis, this.options.url)))
          )
        case "Lease":
          return Effect.flatMap(
            Effect.result(this.guarded(this.store.acquireLease(this.options.key, this.options.owner, this.lease))),
            (acquired) =>
              Result.isFailure(acquired)
                // The lease may have been taken even so (a command that timed out but ran).
                ? this.alone(acquired.failure, snapshot.generation)
                : acquired.success
                ? this.asLeaseholder(avoid, found.success)
                // Another instance took it first: a new holder, which the next read finds.
                : this.shared(avoid, poll, waiting)
          )
        case "Wait":
          return this.waitFor(step.holder, avoid, poll, waiting, found.success)
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
        return Effect.andThen(this.failure(error), this.alone(error, snapshot.generation))
      }
      case "AskAlone":
        return Effect.flatMap(
          this.request,
          (issued) => Effect.orElseSucceed(this.publish(issued, snapshot.generation), () => issued)
        )
      case "Poll":
        return Random.next.pipe(
          Effect.flatMap((random) => Effect.sleep(Core.pollDelayMillis(poll, random))),
          Effect.andThen(Effect.suspend(() => this.shared(avoid, poll + 1, step.waiting)))
        )
    }
  }
}

/** The interpreter of the core's decisions over a store. */
export const make = (options: Options): Sharing => new Sharer(options)
