/**
 * The token store on Redis: the core's key names, scripts and reply readings
 * (core/token/redisStore.ts) run as this line's effects, each operation one Lua script (atomic on
 * the server), a client's failure a `TokenStoreError` scrubbed of what the command carried.
 */
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type * as CoreErrors from "../../../../core/errors.js"
import * as Redaction from "../../../../core/redaction/redaction.js"
import * as Core from "../../../../core/token/redisStore.js"
import * as Entries from "../../../../core/token/storedEntry.js"
import type { TokenStoreError } from "../../ClinicalError.js"
import { fromCore } from "../fromCore.js"
import type { Service } from "./tokenStorePort.js"

/** A 32-byte AES-256-GCM key, as this line holds it. */
export type SealingKey = Redacted.Redacted<Uint8Array>

/** The settings of a Redis store, already checked. */
export type Settings = Core.RedisSettings<SealingKey>

/** A reply reader's result as this line's effect. */
const fromReply = <A>(read: A | CoreErrors.TokenStoreError): Effect.Effect<A, TokenStoreError> =>
  Core.isFailure(read) ? Effect.fail(fromCore(read)) : Effect.succeed(read as A)

/** The store over a Redis port. */
export const make = (redis: Core.RedisCommands, settings: Settings): Service => {
  const names = (key: string) => Core.namesOf(settings.keyPrefix, key)
  const keyBytes = settings.sealingKey === undefined ? undefined : Redacted.value(settings.sealingKey)
  // A client's error may repeat the command it failed on: what the command carried is scrubbed out.
  const call = (
    script: Core.ScriptCall,
    secrets: ReadonlyArray<string> = []
  ): Effect.Effect<unknown, TokenStoreError> =>
    Effect.tryPromise({
      try: () => Core.run(redis, script),
      catch: (cause) => fromCore(Core.unavailable(Redaction.scrub(Core.clientMessageOf(cause), secrets)))
    })

  return {
    read: (key) => {
      const at = names(key)
      return Effect.flatMap(
        call(Core.calls.read(at)),
        (reply) => fromReply(Core.snapshotOf(reply, Redacted.make, keyBytes, at.token))
      )
    },
    acquireLease: (key, owner, ttlMillis) =>
      Effect.map(call(Core.calls.acquireLease(names(key), owner, ttlMillis)), Core.leaseTaken),
    releaseLease: (key, owner) => Effect.asVoid(call(Core.calls.releaseLease(names(key), owner))),
    publish: (key, expected, entry, ttlMillis, owner) => {
      const at = names(key)
      const value = Entries.encode(entry, Redacted.value, keyBytes, at.token)
      return Effect.flatMap(
        call(Core.calls.publish(at, expected, value, ttlMillis, owner), [Redacted.value(entry.token), value]),
        (reply) => fromReply(Core.publishedOf(reply))
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
