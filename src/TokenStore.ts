/**
 * Where the token lives besides each instance's own cache: the store `TokenService` consults when
 * it needs a new token, so that every instance of a fleet can share one.
 *
 * - `layerMemory` (the default, used when no store is provided) keeps the token in this process:
 *   one instance, one token, as without a store.
 * - `layerRedis` shares it among every instance that uses the same Redis and the same
 *   ApplicationId. Refresh is single-flight across the fleet (a lease), a publication can never
 *   overwrite a newer token (a generation number, compared and set in one script), expiry is the
 *   key's own TTL as Redis measures it (so clocks need not agree), a 401/419 drops the stored
 *   token only if it is still the one refused, and a pause the token endpoint asked one instance
 *   for (429, or 503 with `Retry-After`) is honoured by all.
 *
 * The local cache stays in front: a fresh token costs no round trip to the store. The store is
 * consulted only to refresh and to drop a refused token. Redis is reached through a two-function
 * port ({@link RedisCommands}), with adapters for `ioredis` and `redis` (node-redis) typed
 * structurally: the library imports neither, and the application passes its own client.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import { type Events, firstConnection } from "../core/token/redisReady.js"
import { InvalidConfig } from "./ClinicalError.js"
import * as RedisStore from "./internal/token/redisTokenStore.js"
import { type Entry, fingerprint as storedFingerprint, sealingKey } from "./internal/token/storedEntry.js"
import {
  MAX_PAUSE_MILLIS,
  type OnUnavailable,
  type PauseStatus,
  type Service
} from "./internal/token/tokenStorePort.js"
import * as validate from "./internal/validate.js"

export type { Entry } from "./internal/token/storedEntry.js"

export type {
  OnUnavailable,
  Paused,
  PauseStatus,
  Service,
  Snapshot,
  Stored,
  Unreadable
} from "./internal/token/tokenStorePort.js"

/** Which token a token is, without holding it: a 128-bit SHA-256 prefix. */
export const fingerprint: (token: Redacted.Redacted<string>) => string = storedFingerprint

/** The tag of the token store. Without one in context, `TokenService` uses {@link layerMemory}'s. */
export class TokenStore extends Context.Tag("effect-clinical/TokenStore")<TokenStore, Service>() {}

interface MemorySlot {
  stored:
    | { readonly entry: Entry; readonly fingerprint: string; readonly generation: number; readonly expiresAt: number }
    | undefined
  generation: number
  lease: { readonly owner: string; readonly until: number } | undefined
  paused: { readonly status: PauseStatus; readonly until: number } | undefined
}

/**
 * A store in this process's memory, with the same semantics as Redis's (time from Effect's `Clock`).
 * Every `TokenService` without a store in context makes its own; provide one to share it among the
 * clients of one process.
 */
export const memory = (): Service => {
  const slots = new Map<string, MemorySlot>()
  const slotAt = (key: string, now: number): MemorySlot => {
    let slot = slots.get(key)
    if (slot === undefined) {
      slots.set(key, slot = { stored: undefined, generation: 0, lease: undefined, paused: undefined })
    }
    if (slot.stored !== undefined && slot.stored.expiresAt <= now) slot.stored = undefined
    if (slot.lease !== undefined && slot.lease.until <= now) slot.lease = undefined
    if (slot.paused !== undefined && slot.paused.until <= now) slot.paused = undefined
    return slot
  }
  const withSlot = <A>(key: string, f: (slot: MemorySlot, now: number) => A) =>
    Effect.map(Clock.currentTimeMillis, (now) => f(slotAt(key, now), now))
  return {
    read: (key) =>
      withSlot(key, (slot, now) => ({
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
      })),
    acquireLease: (key, owner, ttlMillis) =>
      withSlot(key, (slot, now) => {
        if (slot.lease !== undefined) return false
        slot.lease = { owner, until: now + ttlMillis }
        return true
      }),
    releaseLease: (key, owner) =>
      withSlot(key, (slot) => {
        if (slot.lease?.owner === owner) slot.lease = undefined
      }),
    publish: (key, expected, entry, ttlMillis, owner) =>
      withSlot(key, (slot, now) => {
        if (slot.lease?.owner === owner) slot.lease = undefined
        if (slot.generation !== expected) return undefined
        slot.generation = expected + 1
        slot.stored = {
          entry,
          fingerprint: storedFingerprint(entry.token),
          generation: slot.generation,
          expiresAt: now + ttlMillis
        }
        return slot.generation
      }),
    pause: (key, status, ttlMillis) =>
      withSlot(key, (slot, now) => {
        if (
          slot.paused === undefined || slot.paused.until < now + ttlMillis || slot.paused.until > now + MAX_PAUSE_MILLIS
        ) {
          slot.paused = { status, until: now + ttlMillis }
        }
      }),
    invalidate: (key, fingerprint) =>
      withSlot(key, (slot) => {
        if (slot.stored?.fingerprint === fingerprint) slot.stored = undefined
      }),
    // In memory, nothing can hang or fail: no timer is set around an operation.
    timeoutMillis: Number.POSITIVE_INFINITY,
    retryAfterMillis: 0,
    onUnavailable: "local"
  }
}

/** A store in this process's memory (see {@link memory}): the default. */
export const layerMemory: Layer.Layer<TokenStore> = Layer.sync(TokenStore, memory)

/** What the library needs of a Redis client: send one command, run one Lua script (see {@link ioredis}, {@link nodeRedis}). */
export type RedisCommands = RedisStore.RedisCommands

/** A Lua script and its SHA-1, as EVALSHA wants it. */
export type RedisScript = RedisStore.RedisScript

/** A script ready for `RedisCommands.script`. */
export const redisScript: (source: string) => RedisScript = RedisStore.redisScript

/** The port over any function that sends one command: scripts by EVALSHA, loaded by EVAL when missing. */
export const fromSend: (send: (command: ReadonlyArray<string>) => Promise<unknown>) => RedisCommands =
  RedisStore.fromSend

/** What the library uses of an `ioredis` client (`Redis` or `Cluster`, ioredis 5). */
export interface IoredisLike extends Events {
  readonly call: (command: string, ...args: Array<string>) => Promise<unknown>
  /** `connecting`, `connect`, `reconnecting`, `ready`, ...: the first connection is waited for. */
  readonly status?: string | undefined
}

/** The states of an ioredis client on its way to `ready`. */
const IOREDIS_CONNECTING: ReadonlySet<string> = new Set(["connecting", "connect", "reconnecting"])

/**
 * The port over an `ioredis` client the application created (and connects and closes). Its first
 * connection is waited for (see {@link RedisCommands.ready}).
 */
export const ioredis = (client: IoredisLike): RedisCommands => ({
  ...fromSend((command) => client.call(command[0]!, ...command.slice(1))),
  ready: firstConnection(client, () => IOREDIS_CONNECTING.has(String(client.status)))
})

/** What the library uses of a `redis` (node-redis 4 or 5) client. */
export interface NodeRedisLike extends Events {
  readonly sendCommand: (args: ReadonlyArray<string>) => Promise<unknown>
  /** Connecting or connected (`connect()` was called). */
  readonly isOpen?: boolean | undefined
  /** Connected and ready for commands. */
  readonly isReady?: boolean | undefined
}

/**
 * The port over a `redis` (node-redis) client the application created (and connects and closes).
 * Its first connection (`connect()` called, not yet ready) is waited for.
 */
export const nodeRedis = (client: NodeRedisLike): RedisCommands => ({
  ...fromSend((command) => client.sendCommand(command)),
  ready: firstConnection(client, () => client.isOpen === true && client.isReady === false)
})

/** What {@link layerRedis} takes. */
export interface RedisOptions {
  /** The Redis port: `TokenStore.ioredis(client)`, `TokenStore.nodeRedis(client)`, or your own. */
  readonly redis: RedisCommands
  /** Prefix of the key names (letters, digits, `:`, `_`, `.`, `-`). Default `effect-clinical`. */
  readonly keyPrefix?: string | undefined
  /**
   * Seals the stored token with AES-256-GCM: 32 bytes, or their base64 or hex, best `Redacted`.
   * Every instance of the fleet needs the same key. Default: stored as JSON, unsealed.
   */
  readonly sealingKey?: Redacted.Redacted<string> | Redacted.Redacted<Uint8Array> | string | Uint8Array | undefined
  /** Longest one store operation may take; then the store counts as unavailable. Default 250 ms. */
  readonly timeout?: Duration.DurationInput | undefined
  /** After a failure, how long the store is left alone before it is tried again. Default 5 seconds. */
  readonly retryAfter?: Duration.DurationInput | undefined
  /**
   * While the store fails: `local` (default) fetches a token for this instance alone, as without a
   * store; `fail` fails the refresh with `TokenStoreError`, for a service known to revoke a token
   * when it issues the next one (where instances on their own would invalidate each other).
   */
  readonly onUnavailable?: OnUnavailable | undefined
}

const KEY_PREFIX = /^[A-Za-z0-9:_.-]{1,64}$/

const invalid = (setting: string, reason: string) => new InvalidConfig({ setting: `tokenStore.${setting}`, reason })

/** The duration of a setting, between 1 ms and `maxMillis`. */
const durationSetting = (
  name: string,
  value: unknown,
  fallbackMillis: number,
  maxMillis: number
): Either.Either<number, InvalidConfig> => {
  if (value === undefined) return Either.right(fallbackMillis)
  const millis = Either.map(validate.duration(value), Duration.toMillis)
  return Either.isRight(millis) && millis.right >= 1 && millis.right <= maxMillis
    ? Either.right(millis.right)
    : Either.left(invalid(name, `must be a duration from 1 ms to ${Duration.format(Duration.millis(maxMillis))}`))
}

/** A Redis store from its options, or the `InvalidConfig` naming the setting refused. */
export const redis = (options: RedisOptions): Either.Either<Service, InvalidConfig> =>
  Either.gen(function*() {
    if (typeof options !== "object" || options === null) {
      return yield* Either.left(invalid("options", "must be an object with a redis port"))
    }
    const port = options.redis
    if (typeof port?.send !== "function" || typeof port?.script !== "function") {
      return yield* Either.left(
        invalid(
          "redis",
          "must be a port with send and script: TokenStore.ioredis(client) or TokenStore.nodeRedis(client)"
        )
      )
    }
    const keyPrefix = options.keyPrefix ?? "effect-clinical"
    if (typeof keyPrefix !== "string" || !KEY_PREFIX.test(keyPrefix)) {
      return yield* Either.left(invalid("keyPrefix", "must be 1 to 64 letters, digits, ':', '_', '.' or '-'"))
    }
    const key = options.sealingKey === undefined
      ? undefined
      : yield* Either.mapLeft(sealingKey(options.sealingKey), (reason) => invalid("sealingKey", reason))
    const onUnavailable = options.onUnavailable ?? "local"
    if (onUnavailable !== "local" && onUnavailable !== "fail") {
      return yield* Either.left(invalid("onUnavailable", "must be \"local\" or \"fail\""))
    }
    return RedisStore.make(port, {
      keyPrefix,
      sealingKey: key,
      timeoutMillis: yield* durationSetting("timeout", options.timeout, 250, 60_000),
      retryAfterMillis: yield* durationSetting("retryAfter", options.retryAfter, 5_000, 3_600_000),
      onUnavailable
    })
  })

/** A store shared through Redis (see {@link RedisOptions}). A refused option fails the layer with `InvalidConfig`. */
export const layerRedis = (options: RedisOptions): Layer.Layer<TokenStore, InvalidConfig> =>
  Layer.effect(TokenStore, Effect.suspend(() => redis(options)))
