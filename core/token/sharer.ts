/**
 * How an instance gets a new token when a token store may hold one for the whole fleet, written
 * once for both lines: the store's operations as the sharing uses them (bounded by the store's
 * timeout, their failures counted and logged once per outage, skipped while the store is left
 * alone unless owed, a first connection waited for), and the refresh itself, which the sharing
 * machine decides and core/token/sharingRunner.ts performs. Each line's `internal/token/tokenSharing`
 * hands over its store, its Effect ({@link Line}) and its errors; `TokenService` calls it where it
 * would otherwise request a token itself.
 *
 * The store fails (no answer within its timeout, an error, another key's token): the failure is
 * counted, logged once per outage, the store is left alone for its `retryAfter`, and the refresh
 * goes on alone (`onUnavailable: "local"`) or fails (`"fail"`). A token obtained before the store
 * failed is kept: a failure of the store never costs a second token request. What the instance
 * owes the store (a lease to give back, a token to publish) is still attempted, in the background.
 */
import type { Effects } from "../effects.js"
import type { HttpError, TokenStoreError } from "../errors.js"
import { scrub } from "../redaction/redaction.js"
import { obtain, type Port } from "./sharingRunner.js"
import type { Entry } from "./storedEntry.js"
import type { TokenLine } from "./tokenLine.js"
import {
  FIRST_CONNECTION_MILLIS,
  leaseMillis,
  leftAlone,
  type Limits,
  Outage,
  outageMessage,
  pauseOf,
  RECOVERED,
  REPAIRING,
  timedOut,
  unreadableFailure
} from "./tokenSharing.js"
import type { OnUnavailable, PauseStatus, Snapshot } from "./tokenStore.js"

/** A token store as the sharing uses it: a line's `TokenStore.Service`, its effects `F` (failing with its `TokenStoreError`). */
export interface Store<F, S> {
  /** Succeeds with a `Snapshot<S>`. */
  readonly read: (key: string) => F
  /** Succeeds with whether the lease was free. */
  readonly acquireLease: (key: string, owner: string, ttlMillis: number) => F
  readonly releaseLease: (key: string, owner: string) => F
  /** Succeeds with the new generation, or `undefined` when another instance published first. */
  readonly publish: (key: string, expected: number, entry: Entry<S>, ttlMillis: number, owner: string) => F
  readonly pause?: ((key: string, status: PauseStatus, ttlMillis: number) => F) | undefined
  readonly invalidate: (key: string, fingerprint: string) => F
  readonly timeoutMillis: number
  readonly retryAfterMillis: number
  readonly onUnavailable: OnUnavailable
  /** Succeeds once the store's client made its first connection. */
  readonly ready?: F | undefined
}

/** What differs between the lines: their Effect, clock, timeout, metrics, errors and secrets. */
export interface Line<F, S, E> extends TokenLine<F, S, E> {
  /** Counts a failure of the store by its reason. */
  readonly countFailure: (reason: TokenStoreError["reason"]) => F
  readonly countRepair: F
  readonly countAdopted: F
}

/** What the sharing needs of its client. */
export interface Options<F, S> {
  readonly store: Store<F, S>
  /** The store's name for this client's token (a hash, never the ApplicationId). */
  readonly key: string
  /** This instance's id in the lease. */
  readonly owner: string
  readonly limits: Limits
  readonly tokenTimeoutMillis: number
  /** One token request to the token endpoint: succeeds with an `IssuedToken<S>`, fails with the line's `HttpError`. */
  readonly request: F
  /** The token endpoint's URL, for the error of a request the fleet's pause keeps from going. */
  readonly url: string
  /** Runs work the refresh does not wait for (what the instance owes the store), in the client's scope. */
  readonly background: (effect: F) => F
  /** Secrets a store's error text must not carry (the ApplicationId). */
  readonly secrets: ReadonlyArray<S>
}

/** A client's way to new tokens through a store. */
export class Sharer<F, S, E> {
  private readonly effects: Effects<F>
  // While the store is left alone after a failure, and whether its outage was logged.
  private readonly outage: Outage
  private readonly release: F
  /** Waits (a bounded while) for a store client still making its first connection. */
  private readonly firstConnection: F
  /** What the runner performs a refresh's actions with. */
  private readonly port: Port<F, S, E>

  constructor(private readonly options: Options<F, S>, private readonly line: Line<F, S, E>) {
    const { key, limits, owner, store } = options
    const effects = line.effects
    this.effects = effects
    const lease = leaseMillis(options.tokenTimeoutMillis, store.timeoutMillis)
    this.outage = new Outage(store.retryAfterMillis)
    this.release = effects.ignore(this.guarded(store.releaseLease(key, owner), true))
    this.firstConnection = store.ready === undefined
      ? effects.void
      : effects.ignore(
        line.timeout(store.ready, FIRST_CONNECTION_MILLIS, () => line.wrap(timedOut(FIRST_CONNECTION_MILLIS)))
      )
    const read = effects.flatMap(line.now, (readAt: number) =>
      effects.map(
        this.guarded(effects.flatMap(store.read(key), (snapshot: Snapshot<S>) => {
          const failed = unreadableFailure(snapshot, limits)
          return failed === undefined ? effects.succeed(snapshot) : effects.fail(line.wrap(failed))
        })),
        (snapshot: Snapshot<S>) => ({ snapshot, readAt })
      ))
    // One token request; a pause it is told to make is recorded for the fleet. By the leaseholder,
    // the pause is owed to the fleet as the lease is (see `sharePause`), and the lease goes back if it fails.
    const request = effects.tapError(options.request, (error: HttpError) => this.sharePause(error, false))
    const leaseholderRequest = effects.tapError(options.request, (error: HttpError) => this.sharePause(error, true))
    this.port = {
      effects,
      settings: { limits, leaseMillis: lease, onUnavailable: store.onUnavailable, url: options.url, wrap: line.wrap },
      read,
      acquireLease: this.guarded(store.acquireLease(key, owner, lease)),
      request,
      leaseholderRequest: effects.onError(leaseholderRequest, () => this.release),
      publish: (expected, entry, ttlMillis) =>
        this.guarded(store.publish(key, expected, entry, ttlMillis, owner), true),
      release: this.release,
      background: (effect) => options.background(effects.ignore(effect)),
      repairing: (reason) =>
        effects.andThen(line.countRepair, effects.annotateLogs(effects.logWarning(REPAIRING), { reason })),
      storeFailed: (error) => this.failure(error),
      adopted: line.countAdopted,
      throttled: line.countThrottled,
      now: line.now,
      random: line.random
    }
  }

  /** A new token (succeeds with an `IssuedToken<S>`, fails with the line's `HttpError`); the store's tokens with a fingerprint in `avoid` are not taken. */
  obtain(avoid: ReadonlyArray<string>): F {
    return obtain(this.port, avoid)
  }

  /** Drops the token with this fingerprint from the store if it is still there; a failure only counts and logs. */
  invalidate(fingerprint: string): F {
    return this.effects.ignore(this.guarded(this.options.store.invalidate(this.options.key, fingerprint)))
  }

  /**
   * The token endpoint asked this instance for a pause: the fleet is told before the lease is given
   * back, so that no instance waiting for it asks in the meantime (one store operation, bounded by
   * its timeout). `owed` by a leaseholder, as giving the lease back is: a store left alone after a
   * failure is asked even so, or the others would find the lease free and no pause.
   */
  private sharePause(error: HttpError, owed: boolean): F {
    const pause = pauseOf(error)
    const record = this.options.store.pause
    if (pause === undefined || record === undefined) return this.effects.void
    return this.effects.ignore(this.guarded(record(this.options.key, pause.status, pause.millis), owed))
  }

  /** Counts a failure of the store; the first of an outage is logged. */
  private failure(error: Pick<TokenStoreError, "reason" | "detail">): F {
    const { effects, line } = this
    return effects.flatMap(line.now, (now: number) => {
      const counted = line.countFailure(error.reason)
      if (!this.outage.failed(now)) return counted
      return effects.andThen(
        counted,
        effects.annotateLogs(effects.logWarning(outageMessage(this.options.store.onUnavailable)), {
          reason: error.reason,
          detail: error.detail
        })
      )
    })
  }

  private bounded(operation: F): F {
    const { effects, line } = this
    const timeoutMillis = this.options.store.timeoutMillis
    const bounded = Number.isFinite(timeoutMillis)
      ? line.timeout(operation, timeoutMillis, () => line.wrap(timedOut(timeoutMillis)))
      : operation
    return effects.matchEffect(bounded, {
      onFailure: (error: TokenStoreError) => {
        // A store's error text is foreign: the ApplicationId must not ride on it.
        const detail = scrub(error.detail, this.options.secrets.map(line.reveal))
        const scrubbed = line.wrap({
          _tag: "TokenStoreError",
          operation: error.operation,
          reason: error.reason,
          detail
        })
        return effects.andThen(this.failure({ reason: error.reason, detail }), effects.fail(scrubbed))
      },
      onSuccess: (value) =>
        effects.suspend(() =>
          this.outage.recovered() ? effects.as(effects.logInfo(RECOVERED), value) : effects.succeed(value)
        )
    })
  }

  /**
   * One store operation: bounded by the timeout, its failure counted; skipped while the store is
   * left alone after a failure, unless it is owed (a lease to give back, a token to publish).
   */
  private guarded(operation: F, owed = false): F {
    const { effects } = this
    return effects.flatMap(this.line.now, (now: number) =>
      !owed && this.outage.leftAlone(now)
        ? effects.fail(this.line.wrap(leftAlone(this.options.store.retryAfterMillis)))
        // A client still making its first connection (an instance calling at start-up) is waited
        // for before the operation's timeout starts: else every instance would find the store down
        // and fetch a token of its own. (Nothing to wait for without `ready`.)
        : effects.andThen(this.firstConnection, this.bounded(operation)))
  }
}
