/**
 * What a token store does (the port `TokenStore` names and its adapters implement): the core's
 * plain types (core/token/tokenStore.ts) with this line's `Redacted`, and the service's effects.
 */
import type * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import type * as Core from "../../../core/token/tokenStore.js"
import type { TokenStoreError } from "../../ClinicalError.js"
import type { Entry } from "./storedEntry.js"

export { MAX_PAUSE_MILLIS } from "../../../core/token/tokenStore.js"

export type { OnUnavailable, Paused, PauseStatus, Unreadable } from "../../../core/token/tokenStore.js"

/** A token in the store, as one instance reads it. */
export type Stored = Core.Stored<Redacted.Redacted<string>>

/** What one read of the store finds, in one step. */
export type Snapshot = Core.Snapshot<Redacted.Redacted<string>>

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
    | ((key: string, status: Core.PauseStatus, ttlMillis: number) => Effect.Effect<void, TokenStoreError>)
    | undefined
  /** Drops the stored token if it is still the one with this fingerprint (a 401/419 refused it). */
  readonly invalidate: (key: string, fingerprint: string) => Effect.Effect<void, TokenStoreError>
  /** Longest one operation may take; then it counts as failed. Infinite for a store that cannot hang (no timer is set). */
  readonly timeoutMillis: number
  /** After a failure, how long the store is left alone before it is tried again. */
  readonly retryAfterMillis: number
  /** What a refresh does while the store fails. */
  readonly onUnavailable: Core.OnUnavailable
  /**
   * Resolves once the store's client has made its first connection (bounded), when it is still
   * making it: waited for before an operation's timeout starts. Absent for a store that is always
   * ready.
   */
  readonly ready?: Effect.Effect<void> | undefined
}
