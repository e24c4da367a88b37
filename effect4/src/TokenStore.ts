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
 * The local cache stays in front: a fresh token costs no round trip to the store. Redis is reached
 * through a two-function port ({@link RedisCommands}), with adapters for `ioredis` and `redis`
 * (node-redis) typed structurally: the library imports neither, and the application passes its own
 * client. Every rule (the entry and its seal, the scripts, the options' checks, the memory store's
 * slots) is the core's (core/token/); this module gives them Effect 4's services and layers.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as RedisCore from "../../core/token/redisStore.js"
import { fingerprintOf } from "../../core/token/storedEntry.js"
import { memoryStore } from "../../core/token/tokenStorePort.js"
import type { InvalidConfig } from "./ClinicalError.js"
import { fromCore } from "./internal/fromCore.js"
import type { Line } from "./internal/kind.js"
import { line } from "./internal/line.js"
import * as RedisStore from "./internal/token/redisTokenStore.js"
import type { Service } from "./internal/token/tokenStorePort.js"

export type {
  Entry,
  OnUnavailable,
  Paused,
  PauseStatus,
  Service,
  Snapshot,
  Stored,
  Unreadable
} from "./internal/token/tokenStorePort.js"

/** Which token a token is, without holding it: a 128-bit SHA-256 prefix. */
export const fingerprint = (token: Redacted.Redacted<string>): string => fingerprintOf(Redacted.value(token))

/** The token store. Without one in context, `TokenService` uses a {@link memory} store of its own. */
export class TokenStore extends Context.Service<TokenStore, Service>()("effect-clinical/TokenStore") {}

/**
 * A store in this process's memory, with the same semantics as Redis's (the core's `MemorySlots`,
 * time from Effect's `Clock`). Every `TokenService` without a store in context makes its own;
 * provide one to share it among the clients of one process.
 */
export const memory = (): Service =>
  memoryStore<Line, Redacted.Redacted<string>>((f) => Effect.map(Clock.currentTimeMillis, f), Redacted.value)

/** A store in this process's memory (see {@link memory}), shared by the clients it is provided to. */
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
} from "../../core/token/redisStore.js"

/** What {@link layerRedis} takes (see the core's `RedisOptions`). */
export type RedisOptions = RedisCore.RedisOptions<
  Duration.Input,
  Redacted.Redacted<string> | Redacted.Redacted<Uint8Array>
>

/** A Redis store from its options, or the `InvalidConfig` naming the setting refused (the core's checks). */
export const redis = (options: RedisOptions): Result.Result<Service, InvalidConfig> => {
  const checked = RedisCore.redisSettingsOf(options, line, (bytes) => Redacted.make(bytes))
  return "_tag" in checked
    ? Result.fail(fromCore(checked))
    : Result.succeed(RedisStore.make(checked.redis, checked.settings))
}

/** A store shared through Redis (see {@link RedisOptions}). A refused option fails the layer with `InvalidConfig`. */
export const layerRedis = (options: RedisOptions): Layer.Layer<TokenStore, InvalidConfig> =>
  Layer.effect(TokenStore, Effect.suspend(() => Effect.fromResult(redis(options))))
