/**
 * How an instance gets a new token when a token store may hold one for the whole fleet: the pure
 * decisions, for either Effect line (`S`: its `Redacted`). Each line's `internal/token/tokenSharing`
 * interprets them over its store, where `TokenService` would otherwise request a token itself.
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
 * counted, logged once per outage ({@link Outage}), the store is left alone for its `retryAfter`,
 * and the refresh goes on alone (`onUnavailable: "local"`) or fails (`"fail"`).
 */
import type { HttpError, RateLimited, ServerError, TokenStoreError } from "../errors.js"
import { throttleOf } from "./tokenCache.js"
import type { Issued } from "./tokenResponse.js"
import { MAX_PAUSE_MILLIS, type OnUnavailable, type PauseStatus, type Snapshot } from "./tokenStore.js"

/** A token as the service issued it or the store held it (`S`: the line's `Redacted`). */
export interface IssuedToken<S> extends Issued<S> {
  /** Where it came from: the token endpoint, or the shared token store (another instance asked for it). */
  readonly source: "server" | "store"
  /** Its generation in the token store; `undefined` when it was not published there. */
  readonly storeGeneration: number | undefined
}

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
export const AVOID_NONE: ReadonlyArray<string> = []

/**
 * The stored token as this instance would use it, or `undefined` when it should not: none is
 * stored, it is one of the tokens to `avoid` (by fingerprint: the one being replaced, the one just
 * refused), or it is in its hard window. `readAt` is the local time the read was sent: the time
 * left counts from there.
 */
export const adoptable = <S>(
  snapshot: Snapshot<S>,
  avoid: ReadonlyArray<string>,
  readAt: number,
  limits: Limits
): IssuedToken<S> | undefined => {
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
export const unreadableFailure = <S>(snapshot: Snapshot<S>, limits: Limits): TokenStoreError | undefined => {
  const unreadable = snapshot.unreadable
  return unreadable !== undefined && unreadable.sealedOtherwise &&
      unreadable.remainingMillis <= limits.maxLifetimeMillis
    ? { _tag: "TokenStoreError", operation: "token", reason: "Unreadable", detail: unreadable.reason }
    : undefined
}

/** What an instance does after reading the store. */
export type Step<S> =
  | { readonly _tag: "Adopt"; readonly issued: IssuedToken<S> }
  | { readonly _tag: "Paused"; readonly status: PauseStatus; readonly remainingMillis: number }
  | { readonly _tag: "Lease" }
  | { readonly _tag: "Wait"; readonly holder: string }

/**
 * After a read: adopt the stored token; else, while the token endpoint's pause runs (another
 * instance was told to wait), ask nothing, for at most `maxPauseMillis` before reading again; else
 * take the lease if it is free; else wait for its holder.
 */
export const afterRead = <S>(
  snapshot: Snapshot<S>,
  avoid: ReadonlyArray<string>,
  readAt: number,
  limits: Limits
): Step<S> => {
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
): { readonly status: PauseStatus; readonly millis: number } | undefined => {
  const throttle = throttleOf(error, 0)
  return throttle === undefined || throttle.until <= 0
    ? undefined
    : { status: throttle.error.status === 429 ? 429 : 503, millis: throttle.until }
}

/** The error a token request fails with while the fleet's pause runs: the endpoint's own, counting down. */
export const pausedError = (
  status: PauseStatus,
  remainingMillis: number,
  url: string
): RateLimited | ServerError => {
  const fields = { operation: "token", method: "POST", url, status, retryAfterMillis: remainingMillis } as const
  return status === 429 ? { _tag: "RateLimited", ...fields } : { _tag: "ServerError", ...fields }
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

/** The ttl a token fetched at `issued.sentAt` is published with at `now` (nothing left: not published). */
export const publishTtlMillis = (issued: Issued<unknown>, now: number): number =>
  issued.sentAt + issued.lifetimeMillis - now

const storeError = (reason: TokenStoreError["reason"], detail: string): TokenStoreError => ({
  _tag: "TokenStoreError",
  operation: "token",
  reason,
  detail
})

/** An operation of the store that did not answer within its timeout. */
export const timedOut = (timeoutMillis: number): TokenStoreError =>
  storeError("Timeout", `no answer within ${timeoutMillis} ms`)

/** An operation not tried: the store is left alone after a failure. */
export const leftAlone = (retryAfterMillis: number): TokenStoreError =>
  storeError("Unavailable", `left alone for ${retryAfterMillis} ms after a failure`)

/** A wait given up on a churning lease (see {@link waitStep}). */
export const churned = (step: { readonly changes: number; readonly millis: number }): TokenStoreError =>
  storeError("Timeout", `the lease changed hands ${step.changes} times in ${step.millis} ms without a token published`)

/** What the log says when the store holds what no instance can read, and the leaseholder replaces it. */
export const REPAIRING = "token store holds a value no instance can read; this instance replaces it"

/** What the log says once per outage. */
export const outageMessage = (onUnavailable: OnUnavailable): string =>
  onUnavailable === "local"
    ? "token store unavailable; this instance gets its own tokens until it is back"
    : "token store unavailable; token refreshes fail until it is back"

/** What the log says when the store answers again after an outage. */
export const RECOVERED = "token store available again"

/**
 * An instance's view of its store's health: after a failure the store is left alone for its
 * `retryAfter` (operations not owed are not tried), and an outage is logged once, at its first
 * failure, and its end once.
 */
export class Outage {
  private until = 0
  private down = false

  constructor(private readonly retryAfterMillis: number) {}

  /** A failure at `now`: true when it begins an outage (then it is logged). */
  failed(now: number): boolean {
    this.until = now + this.retryAfterMillis
    const first = !this.down
    this.down = true
    return first
  }

  /** An answer: true when it ends an outage (then it is logged). */
  recovered(): boolean {
    const was = this.down
    this.down = false
    return was
  }

  /** Whether an operation not owed is skipped at `now`. */
  leftAlone(now: number): boolean {
    return now < this.until
  }
}
