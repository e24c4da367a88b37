/**
 * The token store on Redis, as data for either Effect line: the port to a Redis client (Promises
 * alone), its adapters for `ioredis` and `redis` typed structurally (the library imports neither),
 * the key names, one Lua script per operation (so each is atomic on the server), the reading of
 * their replies, and the checking of a Redis store's options. Each line's `TokenStore` runs the
 * calls as effects, with its timeout and errors.
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
import type { TokenStoreError } from "../errors.js"
import { type RedisCommands, type RedisScript, redisScript } from "./redisPort.js"
import { decode, MAX_STORED_LENGTH, Unreadable } from "./storedEntry.js"
import { MAX_PAUSE_MILLIS, type Paused, type PauseStatus, type Snapshot } from "./tokenStore.js"

export * from "./redisPort.js"
export * from "./redisSettings.js"

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
export const READ = redisScript(`${STRING_OR_NONE}
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
export const PAUSE = redisScript(`${STRING_OR_NONE}
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
export const ACQUIRE = redisScript(`${STRING_OR_NONE}
if not usable(KEYS[1]) or redis.call('PTTL', KEYS[1]) == -1 then redis.call('DEL', KEYS[1]) end
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
`)

/**
 * Compare-and-set on the generation: a publisher who read an older one loses. Gives the lease back
 * either way. A generation that is not a number (1 to 15 digits, as {@link generationOf} reads one,
 * and a string) counts as -1, which a publisher that read it so replaces with 1: what no instance
 * can read is repaired, under the lease. SET replaces a key of any type.
 */
export const PUBLISH = redisScript(`${STRING_OR_NONE}
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
export const INVALIDATE = redisScript(`${STRING_OR_NONE}
if not usable(KEYS[1]) then return 0 end
local entry = redis.call('GET', KEYS[1])
if entry and string.sub(entry, 1, 33) == ARGV[1] .. '|' then return redis.call('DEL', KEYS[1]) end
return 0
`)

/** Gives the lease back only if its holder is still `owner`. */
export const RELEASE = redisScript(`${STRING_OR_NONE}
if usable(KEYS[1]) and redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

/** The four key names of one token (`key`: the store's name for it, a hash). */
export interface Names {
  readonly token: string
  readonly generation: string
  readonly lease: string
  readonly pause: string
}

export const namesOf = (keyPrefix: string, key: string): Names => {
  const base = `${keyPrefix}:{${key}}`
  return { token: `${base}:token`, generation: `${base}:generation`, lease: `${base}:lease`, pause: `${base}:pause` }
}

/** One script to run: what a line hands to `RedisCommands.script`. */
export interface ScriptCall {
  readonly script: RedisScript
  readonly keys: ReadonlyArray<string>
  readonly args: ReadonlyArray<string>
}

/** Each operation of the store as the script call it is. */
export const calls = {
  read: (names: Names): ScriptCall => ({
    script: READ,
    keys: [names.token, names.generation, names.lease, names.pause],
    args: [String(MAX_STORED_LENGTH)]
  }),
  acquireLease: (names: Names, owner: string, ttlMillis: number): ScriptCall => ({
    script: ACQUIRE,
    keys: [names.lease],
    args: [owner, String(Math.ceil(ttlMillis))]
  }),
  releaseLease: (names: Names, owner: string): ScriptCall => ({ script: RELEASE, keys: [names.lease], args: [owner] }),
  /** `value`: the entry as stored (`storedEntry.encode`, under `names.token`). */
  publish: (names: Names, expected: number, value: string, ttlMillis: number, owner: string): ScriptCall => ({
    script: PUBLISH,
    keys: [names.token, names.generation, names.lease],
    args: [String(expected), value, String(Math.ceil(ttlMillis)), owner]
  }),
  pause: (names: Names, status: PauseStatus, ttlMillis: number): ScriptCall => ({
    script: PAUSE,
    keys: [names.pause],
    args: [String(status), String(Math.ceil(ttlMillis))]
  }),
  invalidate: (names: Names, fingerprint: string): ScriptCall => ({
    script: INVALIDATE,
    keys: [names.token],
    args: [fingerprint]
  })
} as const

/** Runs a script call over a port. */
export const run = (redis: RedisCommands, call: ScriptCall): Promise<unknown> =>
  redis.script(call.script, call.keys, call.args)

/** The message of whatever a client threw, for an error's detail (scrubbed and cut by the caller). */
export const clientMessageOf = (cause: unknown): string =>
  cause instanceof Error ? cause.message : typeof cause === "string" ? cause : "the Redis client failed"

/** The store could not be reached, or failed (`detail`: the client's words, scrubbed by the caller). */
export const unavailable = (detail: string): TokenStoreError => ({
  _tag: "TokenStoreError",
  operation: "token",
  reason: "Unavailable",
  detail
})

/** The store answered with something that cannot be read. */
export const unreadable = (detail: string): TokenStoreError => ({
  _tag: "TokenStoreError",
  operation: "token",
  reason: "Unreadable",
  detail
})

/** Whether a reply reader's result is a failure. */
export const isFailure = (value: unknown): value is TokenStoreError =>
  typeof value === "object" && value !== null && (value as { readonly _tag?: unknown })._tag === "TokenStoreError"

/** A generation as Redis returns it (a bulk string or an integer); `undefined` when it is neither. */
export const generationOf = (value: unknown): number | undefined => {
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

/**
 * Reads a reply of READ into a snapshot (what is stored but cannot be read, said in it), or the
 * reason it cannot be read at all. `name` is the token's key name (a seal is bound to it).
 */
export const snapshotOf = <S>(
  reply: unknown,
  seal: (token: string) => S,
  sealingKey: Uint8Array | undefined,
  name: string
): Snapshot<S> | TokenStoreError => {
  if (!Array.isArray(reply) || reply.length !== 6) return unreadable("the store's reply is not the expected list")
  const [value, ttl, generationReply, holder, pause, pauseTtl] = reply as ReadonlyArray<unknown>
  const lease = typeof holder === "string" ? holder : undefined
  const paused = pauseOf(pause, pauseTtl)
  const generation = generationOf(generationReply)
  // A generation no instance can read fences nothing: the next publication replaces it.
  if (generation === undefined) {
    return {
      stored: undefined,
      generation: -1,
      lease,
      paused,
      unreadable: { reason: "the stored generation is not a number", sealedOtherwise: false, remainingMillis: Infinity }
    }
  }
  const remainingMillis = Number(ttl)
  // No value, or no TTL (-1: written by hand, it would never expire): nothing usable is stored.
  if (typeof value !== "string" || !(remainingMillis > 0)) return { stored: undefined, generation, lease, paused }
  const decoded = decode(value, seal, sealingKey, name)
  return decoded instanceof Unreadable
    ? {
      stored: undefined,
      generation,
      lease,
      paused,
      unreadable: { reason: decoded.reason, sealedOtherwise: decoded.sealedOtherwise, remainingMillis }
    }
    : { stored: { ...decoded, generation, remainingMillis }, generation, lease, paused }
}

/** Whether a reply of ACQUIRE gave the lease. */
export const leaseTaken = (reply: unknown): boolean => reply === "OK"

/** Reads a reply of PUBLISH: the new generation, `undefined` when another publisher won, or why it cannot be read. */
export const publishedOf = (reply: unknown): number | undefined | TokenStoreError => {
  if (!Array.isArray(reply) || reply.length !== 2) {
    return unreadable("the store's reply to a publication is not the expected list")
  }
  const published = generationOf(reply[1])
  if (published === undefined) return unreadable("the stored generation is not a number")
  return Number(reply[0]) === 1 ? published : undefined
}
