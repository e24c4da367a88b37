/**
 * What a token store holds and answers, as plain types for either Effect line (`S`: the line's
 * `Redacted`), the store's name for a client's token, and the in-memory store's slots: each line's
 * `TokenStore` puts its effects around them.
 */
import * as Crypto from "node:crypto"
import { type Entry, fingerprintOf } from "./storedEntry.js"

/** A token in the store, as one instance reads it. */
export interface Stored<S> {
  readonly entry: Entry<S>
  /** Which token it is (`TokenStore.fingerprint`): how instances compare tokens. */
  readonly fingerprint: string
  /** Its number in the store: the same on every instance that reads it, until the store restarts empty. */
  readonly generation: number
  /** The time it has left, as the store measures it (its key's TTL). */
  readonly remainingMillis: number
}

/** What one read of the store finds, in one step. */
export interface Snapshot<S> {
  /** The token, if one is stored, has time left and can be read. */
  readonly stored: Stored<S> | undefined
  /**
   * The number of the last token published (0 before the first): what a publication compares
   * against. -1 when what is stored there is not a number: the next publication replaces it.
   */
  readonly generation: number
  /** The id of the instance holding the lease (fetching a token for everyone), if one does. */
  readonly lease: string | undefined
  /** What is stored but cannot be read, if anything (see {@link Unreadable}). */
  readonly unreadable?: Unreadable | undefined
  /** A pause the token endpoint asked an instance for, while it runs (see a store's `pause`). */
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
 * The token store's name for a client's token: a hash of where tokens come from and of the
 * ApplicationId (in one letter case), so that clients of one application share it and the store
 * never holds the ApplicationId itself.
 */
export const storeKeyOf = (tokenUrl: string, applicationId: string): string =>
  Crypto.createHash("sha256")
    .update(`effect-clinical token\n${tokenUrl.toLowerCase()}\n${applicationId.toLowerCase()}`)
    .digest("hex")
    .slice(0, 32)

interface Slot<S> {
  stored:
    | {
      readonly entry: Entry<S>
      readonly fingerprint: string
      readonly generation: number
      readonly expiresAt: number
    }
    | undefined
  generation: number
  lease: { readonly owner: string; readonly until: number } | undefined
  paused: { readonly status: PauseStatus; readonly until: number } | undefined
}

/**
 * The in-memory store's state, with the same semantics as Redis's: each method is one atomic step
 * at the local time `now` (the line reads it from its `Clock`), as the store's operations are.
 * `reveal` reads a token to fingerprint it.
 */
export class MemorySlots<S> {
  private readonly slots = new Map<string, Slot<S>>()

  constructor(private readonly reveal: (token: S) => string) {}

  private at(key: string, now: number): Slot<S> {
    let slot = this.slots.get(key)
    if (slot === undefined) {
      this.slots.set(key, slot = { stored: undefined, generation: 0, lease: undefined, paused: undefined })
    }
    if (slot.stored !== undefined && slot.stored.expiresAt <= now) slot.stored = undefined
    if (slot.lease !== undefined && slot.lease.until <= now) slot.lease = undefined
    if (slot.paused !== undefined && slot.paused.until <= now) slot.paused = undefined
    return slot
  }

  read(key: string, now: number): Snapshot<S> {
    const slot = this.at(key, now)
    return {
      stored: slot.stored === undefined ? undefined : {
        entry: slot.stored.entry,
        fingerprint: slot.stored.fingerprint,
        generation: slot.stored.generation,
        remainingMillis: slot.stored.expiresAt - now
      },
      generation: slot.generation,
      lease: slot.lease?.owner,
      paused: slot.paused === undefined
        ? undefined
        : { status: slot.paused.status, remainingMillis: slot.paused.until - now }
    }
  }

  acquireLease(key: string, owner: string, ttlMillis: number, now: number): boolean {
    const slot = this.at(key, now)
    if (slot.lease !== undefined) return false
    slot.lease = { owner, until: now + ttlMillis }
    return true
  }

  releaseLease(key: string, owner: string, now: number): void {
    const slot = this.at(key, now)
    if (slot.lease?.owner === owner) slot.lease = undefined
  }

  publish(key: string, expected: number, entry: Entry<S>, ttlMillis: number, owner: string, now: number) {
    const slot = this.at(key, now)
    if (slot.lease?.owner === owner) slot.lease = undefined
    if (slot.generation !== expected) return undefined
    slot.generation = expected + 1
    slot.stored = {
      entry,
      fingerprint: fingerprintOf(this.reveal(entry.token)),
      generation: slot.generation,
      expiresAt: now + ttlMillis
    }
    return slot.generation
  }

  pause(key: string, status: PauseStatus, ttlMillis: number, now: number): void {
    const slot = this.at(key, now)
    if (
      slot.paused === undefined || slot.paused.until < now + ttlMillis || slot.paused.until > now + MAX_PAUSE_MILLIS
    ) {
      slot.paused = { status, until: now + ttlMillis }
    }
  }

  invalidate(key: string, fingerprint: string, now: number): void {
    const slot = this.at(key, now)
    if (slot.stored?.fingerprint === fingerprint) slot.stored = undefined
  }
}
