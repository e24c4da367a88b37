/**
 * The token store on Redis: four keys per token (names carry a hash, never the ApplicationId),
 * each operation one Lua script, so each is atomic on the server.
 *
 * | key | holds |
 * |---|---|
 * | `{prefix}:{hash}:token` | the token's fingerprint, `|`, the entry (JSON, or sealed), with a TTL of the token's time left |
 * | `{prefix}:{hash}:generation` | the number of the last token published (no TTL) |
 * | `{prefix}:{hash}:lease` | the id of the instance fetching a token, with a TTL |
 * | `{prefix}:{hash}:pause` | `429` or `503`: the token endpoint asked for a pause, with a TTL of its `Retry-After` |
 *
 * The `{hash}` braces are a Redis Cluster hash tag: the four keys of a token live on one node, as
 * a script needs.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Redacted from "effect/Redacted"
import * as Crypto from "node:crypto"
import { TokenStoreError } from "../../ClinicalError.js"
import { scrub } from "../redaction/redaction.js"
import { decode, encode, MAX_STORED_LENGTH, type SealingKey } from "./storedEntry.js"
import {
  MAX_PAUSE_MILLIS,
  type OnUnavailable,
  type Paused,
  type PauseStatus,
  type Service,
  type Snapshot
} from "./tokenStorePort.js"

/**
 * What the library needs of a Redis client: send one command, run one Lua script. Build one with
 * `TokenStore.ioredis` or `TokenStore.nodeRedis`, or write your own in a few lines.
 */
export interface RedisCommands {
  /** Sends one command, e.g. `["SET", "k", "v", "NX", "PX", "1000"]`, and resolves with Redis's reply. */
  readonly send: (command: ReadonlyArray<string>) => Promise<unknown>
  /** Runs a Lua script (EVALSHA, then EVAL if Redis does not have it yet) and resolves with its reply. */
  readonly script: (
    script: RedisScript,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string>
  ) => Promise<unknown>
  /**
   * Resolves once the client has made its first connection, when it is still making it (a client
   * whose offline queue is off fails commands until then). Optional: a client that is always ready
   * leaves it out. `TokenStore.ioredis` and `TokenStore.nodeRedis` have it.
   */
  readonly ready?: (() => Promise<void>) | undefined
}

/** A Lua script and its SHA-1, as EVALSHA wants it. */
export interface RedisScript {
  readonly source: string
  readonly sha1: string
}

/** A script ready for `RedisCommands.script`. */
export const redisScript = (source: string): RedisScript => ({
  source,
  sha1: Crypto.createHash("sha1").update(source).digest("hex")
})

const isNoScript = (error: unknown): boolean =>
  typeof (error as { readonly message?: unknown } | null)?.message === "string" &&
  (error as { readonly message: string }).message.startsWith("NOSCRIPT")

/** The port over any function that sends one command: scripts by EVALSHA, loaded by EVAL when missing. */
export const fromSend = (send: (command: ReadonlyArray<string>) => Promise<unknown>): RedisCommands => ({
  send,
  script: async (script, keys, args) => {
    const rest = [String(keys.length), ...keys, ...args]
    try {
      return await send(["EVALSHA", script.sha1, ...rest])
    } catch (error) {
      if (!isNoScript(error)) throw error
      return send(["EVAL", script.source, ...rest])
    }
  }
})

/** The settings of a Redis store, already checked. */
export interface Settings {
  readonly keyPrefix: string
  readonly sealingKey: SealingKey | undefined
  readonly timeoutMillis: number
  readonly retryAfterMillis: number
  readonly onUnavailable: OnUnavailable
}

/**
 * Whether a key holds a string or nothing: a key of another type (planted with HSET, say) makes
 * GET fail with WRONGTYPE, so every script reads around it, and replaces it when it writes.
 */
const STRING_OR_NONE = `local function usable(key)
  local kind = redis.call('TYPE', key).ok
  return kind == 'string' or kind == 'none'
end
`

/**
 * The token (or a mark when it is longer than any token, or not a string), its TTL, the last
 * generation (a mark when not a string), the lease's holder, and the token endpoint's pause and its
 * TTL, in one step. A lease without an expiry (written by hand, or left by `PERSIST`) would never
 * end: it counts as none, and the next lease replaces it. A pause is read only when it is a short
 * string.
 */
const READ = redisScript(`${STRING_OR_NONE}
local entry = false
if not usable(KEYS[1]) then entry = 'not a string'
elseif redis.call('STRLEN', KEYS[1]) > tonumber(ARGV[1]) then entry = 'oversized'
else entry = redis.call('GET', KEYS[1]) end
local ttl = redis.call('PTTL', KEYS[1])
local generation = 'not a string'
if usable(KEYS[2]) then generation = redis.call('GET', KEYS[2]) end
local holder = false
if usable(KEYS[3]) and redis.call('PTTL', KEYS[3]) > 0 then holder = redis.call('GET', KEYS[3]) end
local pause = false
if usable(KEYS[4]) and redis.call('STRLEN', KEYS[4]) <= 3 then pause = redis.call('GET', KEYS[4]) end
return {entry, ttl, generation, holder, pause, redis.call('PTTL', KEYS[4])}
`)

/**
 * The token endpoint's pause, unless a longer one that instances honour is recorded: what they do
 * not honour (another value or type, no TTL, a TTL past the longest pause) is replaced. SET
 * replaces a key of any type.
 */
const PAUSE = redisScript(`${STRING_OR_NONE}
local honoured = false
if usable(KEYS[1]) and redis.call('STRLEN', KEYS[1]) == 3 then
  local status = redis.call('GET', KEYS[1])
  local ttl = redis.call('PTTL', KEYS[1])
  honoured = (status == '429' or status == '503') and ttl >= tonumber(ARGV[2]) and ttl <= ${MAX_PAUSE_MILLIS}
end
if not honoured then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
return 1
`)

/** The lease for `owner`, unless another holds one that expires. */
const ACQUIRE = redisScript(`${STRING_OR_NONE}
if not usable(KEYS[1]) or redis.call('PTTL', KEYS[1]) == -1 then redis.call('DEL', KEYS[1]) end
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
`)

/**
 * Compare-and-set on the generation: a publisher who read an older one loses. Gives the lease back
 * either way. A generation that is not a number (1 to 15 digits, as {@link generationOf} reads one,
 * and a string) counts as -1, which a publisher that read it so replaces with 1: what no instance
 * can read is repaired, under the lease. SET replaces a key of any type.
 */
const PUBLISH = redisScript(`${STRING_OR_NONE}
if usable(KEYS[3]) and redis.call('GET', KEYS[3]) == ARGV[4] then redis.call('DEL', KEYS[3]) end
local stored = 'not a string'
if usable(KEYS[2]) then stored = redis.call('GET', KEYS[2]) end
local current = 0
if stored then
  if string.len(stored) <= 15 and string.match(stored, '^%d+$') then current = tonumber(stored) else current = -1 end
end
if current ~= tonumber(ARGV[1]) then return {0, current} end
local generation = math.max(current, 0) + 1
redis.call('SET', KEYS[2], generation)
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return {1, generation}
`)

/** Drops the token only if it is still the one refused: its value begins with that fingerprint. */
const INVALIDATE = redisScript(`${STRING_OR_NONE}
if not usable(KEYS[1]) then return 0 end
local entry = redis.call('GET', KEYS[1])
if entry and string.sub(entry, 1, 33) == ARGV[1] .. '|' then return redis.call('DEL', KEYS[1]) end
return 0
`)

/** Gives the lease back only if its holder is still `owner`. */
const RELEASE = redisScript(`${STRING_OR_NONE}
if usable(KEYS[1]) and redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

/** The message of whatever the client threw, for an error's detail (scrubbed and cut by the caller). */
const messageOf = (cause: unknown): string =>
  cause instanceof Error ? cause.message : typeof cause === "string" ? cause : "the Redis client failed"

const failed = (detail: string) => new TokenStoreError({ operation: "token", reason: "Unavailable", detail })

const unreadable = (detail: string) => new TokenStoreError({ operation: "token", reason: "Unreadable", detail })

/** A generation as Redis returns it (a bulk string or an integer); `undefined` when it is neither. */
const generationOf = (value: unknown): number | undefined => {
  if (value === null || value === undefined) return 0
  const n = typeof value === "number"
    ? value
    : typeof value === "string" && /^\d{1,15}$/.test(value)
    ? Number(value)
    : NaN
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined
}

/** A pause as READ returns it: a status the token endpoint pauses with, and a TTL; else none. */
const pauseOf = (value: unknown, ttl: unknown): Paused | undefined => {
  const remainingMillis = Number(ttl)
  return (value === "429" || value === "503") && remainingMillis > 0
    ? { status: Number(value) as PauseStatus, remainingMillis }
    : undefined
}

/** Reads a reply of READ into a snapshot (what is stored but cannot be read, said in it), or the reason it cannot be read at all. */
export const snapshotOf = (
  reply: unknown,
  sealingKey: SealingKey | undefined,
  name: string
): Either.Either<Snapshot, TokenStoreError> => {
  if (!Array.isArray(reply) || reply.length !== 6) {
    return Either.left(unreadable("the store's reply is not the expected list"))
  }
  const [value, ttl, generationReply, holder, pause, pauseTtl] = reply as ReadonlyArray<unknown>
  const lease = typeof holder === "string" ? holder : undefined
  const paused = pauseOf(pause, pauseTtl)
  const generation = generationOf(generationReply)
  // A generation no instance can read fences nothing: the next publication replaces it.
  if (generation === undefined) {
    return Either.right({
      stored: undefined,
      generation: -1,
      lease,
      paused,
      unreadable: { reason: "the stored generation is not a number", sealedOtherwise: false, remainingMillis: Infinity }
    })
  }
  const remainingMillis = Number(ttl)
  // No value, or no TTL (-1: written by hand, it would never expire): nothing usable is stored.
  if (typeof value !== "string" || !(remainingMillis > 0)) {
    return Either.right({ stored: undefined, generation, lease, paused })
  }
  const decoded = decode(value, sealingKey, name)
  return Either.right(
    Either.isRight(decoded)
      ? {
        stored: { ...decoded.right, generation, remainingMillis },
        generation,
        lease,
        paused
      }
      : { stored: undefined, generation, lease, paused, unreadable: { ...decoded.left, remainingMillis } }
  )
}

/** The store over a Redis port. */
export const make = (redis: RedisCommands, settings: Settings): Service => {
  const names = (key: string) => {
    const base = `${settings.keyPrefix}:{${key}}`
    return {
      token: `${base}:token`,
      generation: `${base}:generation`,
      lease: `${base}:lease`,
      pause: `${base}:pause`
    }
  }
  // A client's error may repeat the command it failed on: what the command carried is scrubbed out.
  const call = <A>(
    run: () => Promise<A>,
    // Stryker disable next-line ArrayDeclaration: equivalent, a client's error never holds the text Stryker puts in
    secrets: ReadonlyArray<Redacted.Redacted<string> | string> = []
  ): Effect.Effect<A, TokenStoreError> =>
    Effect.tryPromise({ try: run, catch: (cause) => failed(scrub(messageOf(cause), secrets)) })

  return {
    read: (key) => {
      const { generation, lease, pause, token } = names(key)
      return Effect.flatMap(
        call(() => redis.script(READ, [token, generation, lease, pause], [String(MAX_STORED_LENGTH)])),
        (reply) => snapshotOf(reply, settings.sealingKey, token)
      )
    },
    acquireLease: (key, owner, ttlMillis) =>
      Effect.map(
        call(() => redis.script(ACQUIRE, [names(key).lease], [owner, String(Math.ceil(ttlMillis))])),
        (reply) => reply === "OK"
      ),
    releaseLease: (key, owner) => Effect.asVoid(call(() => redis.script(RELEASE, [names(key).lease], [owner]))),
    publish: (key, expected, entry, ttlMillis, owner) => {
      const { generation, lease, token } = names(key)
      const value = encode(entry, settings.sealingKey, token)
      const args = [String(expected), value, String(Math.ceil(ttlMillis)), owner]
      return Effect.flatMap(
        call(() => redis.script(PUBLISH, [token, generation, lease], args), [entry.token, value]),
        (reply) => {
          if (!Array.isArray(reply) || reply.length !== 2) {
            return Effect.fail(unreadable("the store's reply to a publication is not the expected list"))
          }
          const published = generationOf(reply[1])
          if (published === undefined) return Effect.fail(unreadable("the stored generation is not a number"))
          return Effect.succeed(Number(reply[0]) === 1 ? published : undefined)
        }
      )
    },
    pause: (key, status, ttlMillis) =>
      Effect.asVoid(
        call(() => redis.script(PAUSE, [names(key).pause], [String(status), String(Math.ceil(ttlMillis))]))
      ),
    invalidate: (key, fingerprint) =>
      Effect.asVoid(call(() => redis.script(INVALIDATE, [names(key).token], [fingerprint]))),
    timeoutMillis: settings.timeoutMillis,
    retryAfterMillis: settings.retryAfterMillis,
    onUnavailable: settings.onUnavailable,
    ready: redis.ready === undefined ? undefined : Effect.promise(redis.ready)
  }
}
