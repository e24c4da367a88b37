/**
 * What a token store does, the port each line's `TokenStore` names and its adapters implement,
 * declared once: over a line's effect type (`L`, see core/kind.ts), its `Redacted` (`S`) and its
 * `TokenStoreError` (`X`).
 */
import type { EffectKind, Kind } from "../kind.js"
import type { Entry } from "./storedEntry.js"
import { MemorySlots, type OnUnavailable, type PauseStatus, type Snapshot } from "./tokenStore.js"

/**
 * A token store. `key` names one token (the client derives it from a hash of the ApplicationId and
 * the token URL, never the ApplicationId itself). Every operation is one atomic step of the store.
 */
export interface StoreService<L extends EffectKind, S, X> {
  /** The stored token, the last generation and whether the lease is held. */
  readonly read: (key: string) => Kind<L, Snapshot<S>, X>
  /** Takes the lease for `ttlMillis` unless another instance holds it (a lease without an expiry counts as none); true when taken. */
  readonly acquireLease: (key: string, owner: string, ttlMillis: number) => Kind<L, boolean, X>
  /** Gives the lease back, if `owner` still holds it. */
  readonly releaseLease: (key: string, owner: string) => Kind<L, void, X>
  /**
   * Stores `entry` for `ttlMillis` as generation `expected + 1` if and only if the last generation
   * is still `expected`: the new generation, or `undefined` when another instance published first
   * (a late publisher never overwrites a newer token). Gives `owner`'s lease back either way.
   */
  readonly publish: (
    key: string,
    expected: number,
    entry: Entry<S>,
    ttlMillis: number,
    owner: string
  ) => Kind<L, number | undefined, X>
  /**
   * Records that the token endpoint asked for a pause of `ttlMillis` (its `Retry-After`) with
   * `status`, unless a longer one is recorded: until it ends, every instance fails its token
   * requests fast instead of asking. Optional: a store without it shares no pause.
   */
  readonly pause?: ((key: string, status: PauseStatus, ttlMillis: number) => Kind<L, void, X>) | undefined
  /** Drops the stored token if it is still the one with this fingerprint (a 401/419 refused it). */
  readonly invalidate: (key: string, fingerprint: string) => Kind<L, void, X>
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
  readonly ready?: Kind<L, void> | undefined
}

/**
 * A store in this process's memory over {@link MemorySlots}, each operation one step at the time
 * `at` reads from the line's clock. Nothing in memory can hang or fail: no timer is set around an
 * operation, and a failing store's fallback never comes into play.
 */
export const memoryStore = <L extends EffectKind, S>(
  at: <A>(f: (now: number) => A) => Kind<L, A>,
  reveal: (token: S) => string
): StoreService<L, S, never> => {
  const slots = new MemorySlots<S>(reveal)
  return {
    read: (key) => at((now) => slots.read(key, now)),
    acquireLease: (key, owner, ttlMillis) => at((now) => slots.acquireLease(key, owner, ttlMillis, now)),
    releaseLease: (key, owner) => at((now) => slots.releaseLease(key, owner, now)),
    publish: (key, expected, entry, ttlMillis, owner) =>
      at((now) => slots.publish(key, expected, entry, ttlMillis, owner, now)),
    pause: (key, status, ttlMillis) => at((now) => slots.pause(key, status, ttlMillis, now)),
    invalidate: (key, fingerprint) => at((now) => slots.invalidate(key, fingerprint, now)),
    timeoutMillis: Number.POSITIVE_INFINITY,
    retryAfterMillis: 0,
    onUnavailable: "local"
  }
}
