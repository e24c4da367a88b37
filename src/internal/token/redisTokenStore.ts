/**
 * The token store on Redis: the core's key names, scripts and reply readings
 * (core/token/redisStore.ts) run as this line's effects, each operation one Lua script (atomic on
 * the server), a client's failure a `TokenStoreError` scrubbed of what the command carried.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import * as Core from "../../../core/token/redisStore.js"
import { TokenStoreError } from "../../ClinicalError.js"
import { fromCore } from "../fromCore.js"
import { scrub } from "../redaction/redaction.js"
import { encode, type SealingKey } from "./storedEntry.js"
import type { Service, Snapshot } from "./tokenStorePort.js"

/**
 * What the library needs of a Redis client: send one command, run one Lua script. Build one with
 * `TokenStore.ioredis` or `TokenStore.nodeRedis`, or write your own in a few lines.
 */
export type RedisCommands = Core.RedisCommands

/** A Lua script and its SHA-1, as EVALSHA wants it. */
export type RedisScript = Core.RedisScript

/** A script ready for `RedisCommands.script`. */
export const redisScript: (source: string) => RedisScript = Core.redisScript

/** The port over any function that sends one command: scripts by EVALSHA, loaded by EVAL when missing. */
export const fromSend: (send: (command: ReadonlyArray<string>) => Promise<unknown>) => RedisCommands = Core.fromSend

/** The settings of a Redis store, already checked. */
export type Settings = Core.RedisSettings<SealingKey>

const keyBytes = (key: SealingKey | undefined) => key === undefined ? undefined : Redacted.value(key)

/** Reads a reply of READ into a snapshot (what is stored but cannot be read, said in it), or the reason it cannot be read at all. */
export const snapshotOf = (
  reply: unknown,
  sealingKey: SealingKey | undefined,
  name: string
): Either.Either<Snapshot, TokenStoreError> => {
  const read = Core.snapshotOf(reply, Redacted.make, keyBytes(sealingKey), name)
  return Core.isFailure(read) ? Either.left(fromCore(read)) : Either.right(read)
}

/** The store over a Redis port. */
export const make = (redis: RedisCommands, settings: Settings): Service => {
  const names = (key: string) => Core.namesOf(settings.keyPrefix, key)
  // A client's error may repeat the command it failed on: what the command carried is scrubbed out.
  const call = (
    script: Core.ScriptCall,
    // Stryker disable next-line ArrayDeclaration: equivalent, a client's error never holds the text Stryker puts in
    secrets: ReadonlyArray<Redacted.Redacted<string> | string> = []
  ): Effect.Effect<unknown, TokenStoreError> =>
    Effect.tryPromise({
      try: () => Core.run(redis, script),
      catch: (cause) => fromCore(Core.unavailable(scrub(Core.clientMessageOf(cause), secrets)))
    })

  return {
    read: (key) => {
      const at = names(key)
      return Effect.flatMap(call(Core.calls.read(at)), (reply) => snapshotOf(reply, settings.sealingKey, at.token))
    },
    acquireLease: (key, owner, ttlMillis) =>
      Effect.map(call(Core.calls.acquireLease(names(key), owner, ttlMillis)), Core.leaseTaken),
    releaseLease: (key, owner) => Effect.asVoid(call(Core.calls.releaseLease(names(key), owner))),
    publish: (key, expected, entry, ttlMillis, owner) => {
      const at = names(key)
      const value = encode(entry, settings.sealingKey, at.token)
      return Effect.flatMap(
        call(Core.calls.publish(at, expected, value, ttlMillis, owner), [entry.token, value]),
        (reply) => {
          const published = Core.publishedOf(reply)
          return Core.isFailure(published) ? Effect.fail(fromCore(published)) : Effect.succeed(published)
        }
      )
    },
    pause: (key, status, ttlMillis) => Effect.asVoid(call(Core.calls.pause(names(key), status, ttlMillis))),
    invalidate: (key, fingerprint) => Effect.asVoid(call(Core.calls.invalidate(names(key), fingerprint))),
    timeoutMillis: settings.timeoutMillis,
    retryAfterMillis: settings.retryAfterMillis,
    onUnavailable: settings.onUnavailable,
    ready: redis.ready === undefined ? undefined : Effect.promise(redis.ready)
  }
}
