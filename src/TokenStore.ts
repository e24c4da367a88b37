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
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as RedisCore from "../core/token/redisStore.js"
import { memoryStore } from "../core/token/tokenStorePort.js"
import type { InvalidConfig } from "./ClinicalError.js"
import { fromCore } from "./internal/fromCore.js"
import type { Line } from "./internal/kind.js"
import * as RedisStore from "./internal/token/redisTokenStore.js"
import { fingerprint as storedFingerprint } from "./internal/token/storedEntry.js"
import type { Service } from "./internal/token/tokenStorePort.js"
import { line } from "./internal/validate.js"

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

/**
 * A store in this process's memory, with the same semantics as Redis's (the core's `MemorySlots`,
 * time from Effect's `Clock`). Every `TokenService` without a store in context makes its own;
 * provide one to share it among the clients of one process.
 */
export const memory = (): Service =>
  memoryStore<Line, Redacted.Redacted<string>>((f) => Effect.map(Clock.currentTimeMillis, f), Redacted.value)

/** A store in this process's memory (see {@link memory}): the default. */
export const layerMemory: Layer.Layer<TokenStore> = Layer.sync(TokenStore, memory)

/**
 * The Redis port and its adapters, the core's (core/token/redisStore.ts): what the library needs of
 * a Redis client (send one command, run one Lua script), `ioredis` and `nodeRedis` over a client the
 * application created (and connects and closes), `fromSend` over any function that sends a command.
 */
export {
  fromSend,
  ioredis,
  type IoredisLike,
  nodeRedis,
  type NodeRedisLike,
  type RedisCommands,
  type RedisScript,
  redisScript
} from "../core/token/redisStore.js"

/** What {@link layerRedis} takes (see the core's `RedisOptions`). */
export type RedisOptions = RedisCore.RedisOptions<
  Duration.DurationInput,
  Redacted.Redacted<string> | Redacted.Redacted<Uint8Array>
>

/** A Redis store from its options, or the `InvalidConfig` naming the setting refused (the core's checks). */
export const redis = (options: RedisOptions): Either.Either<Service, InvalidConfig> => {
  const checked = RedisCore.redisSettingsOf(options, line, (bytes) => Redacted.make(bytes))
  return "_tag" in checked
    ? Either.left(fromCore(checked))
    : Either.right(RedisStore.make(checked.redis, checked.settings))
}

/** A store shared through Redis (see {@link RedisOptions}). A refused option fails the layer with `InvalidConfig`. */
export const layerRedis = (options: RedisOptions): Layer.Layer<TokenStore, InvalidConfig> =>
  Layer.effect(TokenStore, Effect.suspend(() => redis(options)))
