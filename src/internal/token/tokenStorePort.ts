/**
 * What a token store does (the port `TokenStore` names and its adapters implement): the types
 * alone, so that an adapter and the public module import them without importing each other.
 */
import type * as Effect from "effect/Effect"
import type { TokenStoreError } from "../../ClinicalError.js"
import type { Entry } from "./storedEntry.js"

/** A token in the store, as one instance reads it. */
export interface Stored {
  readonly entry: Entry
  /** Which token it is (`TokenStore.fingerprint`): how instances compare tokens. */
  readonly fingerprint: string
  /** Its number in the store: the same on every instance that reads it, until the store restarts empty. */
  readonly generation: number
  /** The time it has left, as the store measures it (its key's TTL). */
  readonly remainingMillis: number
}

/** What one read of the store finds, in one step. */
export interface Snapshot {
  /** The token, if one is stored, has time left and can be read. */
  readonly stored: Stored | undefined
  /**
   * The number of the last token published (0 before the first): what a publication compares
   * against. -1 when what is stored there is not a number: the next publication replaces it.
   */
  readonly generation: number
  /** The id of the instance holding the lease (fetching a token for everyone), if one does. */
  readonly lease: string | undefined
  /** What is stored but cannot be read, if anything (see {@link Unreadable}). */
  readonly unreadable?: Unreadable | undefined
  /** A pause the token endpoint asked an instance for, while it runs (see {@link Service.pause}). */
  readonly paused?: Paused | undefined
}

/** The statuses with which a token endpoint asks for a pause: 429, or 503 with `Retry-After`. */
export type PauseStatus = 429 | 503

/**
 * Longest pause an instance records (`maxRetryAfter` is at most an hour): one with more time left
 * is no instance's (planted by hand), and is not honoured.
 */
export const MAX_PAUSE_MILLIS = 3_600_000

/** A pause of the token endpoint's, as the store holds it: the status that asked for it and the time it has left. */
export interface Paused {
  readonly status: PauseStatus
  readonly remainingMillis: number
}

/**
 * Something the store holds that this instance cannot read. It is replaced by the next
 * publication, which the instance makes (repairing the store), unless it may be a token sealed with
 * another key with time left: then instances with another key are at work, and this one goes on as
 * when the store fails until that token expires.
 */
export interface Unreadable {
  /** What cannot be read, and why; never the value. */
  readonly reason: string
  /** It may be a token sealed with another key than this instance's (or tampered with: a seal cannot tell). */
  readonly sealedOtherwise: boolean
  /** The time it has left (its key's TTL), `Infinity` when it has none. */
  readonly remainingMillis: number
}

/** What an instance does when the store fails: use a token of its own (`local`), or fail the refresh (`fail`). */
export type OnUnavailable = "local" | "fail"

/**
 * A token store. `key` names one token (the client derives it from a hash of the ApplicationId and
 * the token URL, never the ApplicationId itself). Every operation is one atomic step of the store.
 */
export interface Service {
  /** The stored token, the last generation and whether the lease is held. */
  readonly read: (key: string) => Effect.Effect<Snapshot, TokenStoreError>
  /** Takes the lease for `ttlMillis` unless another instance holds it (a lease without an expiry counts as none); true when taken. */
  readonly acquireLease: (key: string, owner: string, ttlMillis: number) => Effect.Effect<boolean, TokenStoreError>
  /** Gives the lease back, if `owner` still holds it. */
  readonly releaseLease: (key: string, owner: string) => Effect.Effect<void, TokenStoreError>
  /**
   * Stores `entry` for `ttlMillis` as generation `expected + 1` if and only if the last generation
   * is still `expected`: the new generation, or `undefined` when another instance published first
   * (a late publisher never overwrites a newer token). Gives `owner`'s lease back either way.
   */
  readonly publish: (
    key: string,
    expected: number,
    entry: Entry,
    ttlMillis: number,
    owner: string
  ) => Effect.Effect<number | undefined, TokenStoreError>
  /**
   * Records that the token endpoint asked for a pause of `ttlMillis` (its `Retry-After`) with
   * `status`, unless a longer one is recorded: until it ends, every instance fails its token
   * requests fast instead of asking. Optional: a store without it shares no pause.
   */
  readonly pause?:
    | ((key: string, status: PauseStatus, ttlMillis: number) => Effect.Effect<void, TokenStoreError>)
    | undefined
  /** Drops the stored token if it is still the one with this fingerprint (a 401/419 refused it). */
  readonly invalidate: (key: string, fingerprint: string) => Effect.Effect<void, TokenStoreError>
  /** Longest one operation may take; then it counts as failed. Infinite for a store that cannot hang (no timer is set). */
  readonly timeoutMillis: number
  /** After a failure, how long the store is left alone before it is tried again. */
  readonly retryAfterMillis: number
  /** What a refresh does while the store fails. */
  readonly onUnavailable: OnUnavailable
  /**
   * Resolves once the store's client has made its first connection (bounded), when it is still
   * making it: waited for before an operation's timeout starts. Absent for a store that is always
   * ready.
   */
  readonly ready?: Effect.Effect<void> | undefined
}
