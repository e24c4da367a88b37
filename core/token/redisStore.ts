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
import * as Crypto from "node:crypto"
import * as Settings from "../config/settings.js"
import type { InvalidConfig, TokenStoreError } from "../errors.js"
import { type Events, firstConnection } from "./redisReady.js"
import { decode, MAX_STORED_LENGTH, sealingKeyBytes, Unreadable } from "./storedEntry.js"
import { MAX_PAUSE_MILLIS, type OnUnavailable, type Paused, type PauseStatus, type Snapshot } from "./tokenStore.js"

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

/**
 * What a line's `TokenStore.layerRedis` takes: `DurationInput` is what the line's `Duration`
 * reads, `Secret` how it holds a secret (its `Redacted`).
 */
export interface RedisOptions<DurationInput, Secret> {
  /** The Redis port: `TokenStore.ioredis(client)`, `TokenStore.nodeRedis(client)`, or your own. */
  readonly redis: RedisCommands
  /** Prefix of the key names (letters, digits, `:`, `_`, `.`, `-`). Default `effect-clinical`. */
  readonly keyPrefix?: string | undefined
  /**
   * Seals the stored token with AES-256-GCM: 32 bytes, or their base64 or hex, best `Redacted`.
   * Every instance of the fleet needs the same key. Default: stored as JSON, unsealed.
   */
  readonly sealingKey?: Secret | string | Uint8Array | undefined
  /** Longest one store operation may take; then the store counts as unavailable. Default 250 ms. */
  readonly timeout?: DurationInput | undefined
  /** After a failure, how long the store is left alone before it is tried again. Default 5 seconds. */
  readonly retryAfter?: DurationInput | undefined
  /**
   * While the store fails: `local` (default) fetches a token for this instance alone, as without a
   * store; `fail` fails the refresh with `TokenStoreError`, for a service known to revoke a token
   * when it issues the next one (where instances on their own would invalidate each other).
   */
  readonly onUnavailable?: "local" | "fail" | undefined
}

/** The settings of a Redis store, checked; `K` is how the line holds the sealing key. */
export interface RedisSettings<K> {
  readonly keyPrefix: string
  readonly sealingKey: K | undefined
  readonly timeoutMillis: number
  readonly retryAfterMillis: number
  readonly onUnavailable: OnUnavailable
}

const KEY_PREFIX = /^[A-Za-z0-9:_.-]{1,64}$/

const invalid = (setting: string, reason: string): InvalidConfig => ({
  _tag: "InvalidConfig",
  setting: `tokenStore.${setting}`,
  reason
})

/** The duration of a setting in ms, between 1 ms and `maxMillis` (written as `maxText`). */
const durationSetting = <S, D>(
  name: string,
  value: unknown,
  line: Settings.Line<S, D>,
  fallbackMillis: number,
  max: { readonly millis: number; readonly text: string }
): number | InvalidConfig => {
  if (value === undefined) return fallbackMillis
  const checked = Settings.duration(value, line)
  const millis = checked.ok ? line.toMillis(checked.value) : NaN
  return millis >= 1 && millis <= max.millis
    ? millis
    : invalid(name, `must be a duration from 1 ms to ${max.text}`)
}

const isRefusal = (value: unknown): value is InvalidConfig =>
  typeof value === "object" && value !== null && (value as { readonly _tag?: unknown })._tag === "InvalidConfig"

/**
 * A Redis store's settings from its options (`redis`, `keyPrefix`, `sealingKey`, `timeout`,
 * `retryAfter`, `onUnavailable`: see a line's `TokenStore.RedisOptions`), or the `InvalidConfig`
 * naming the setting refused. `sealKey` holds the key's bytes as the line holds secrets.
 */
export const redisSettingsOf = <S, D, K>(
  options: unknown,
  line: Settings.Line<S, D>,
  sealKey: (bytes: Uint8Array) => K
): { readonly redis: RedisCommands; readonly settings: RedisSettings<K> } | InvalidConfig => {
  if (typeof options !== "object" || options === null) return invalid("options", "must be an object with a redis port")
  const { redis: port, retryAfter, sealingKey, timeout } = options as Record<string, unknown>
  const keyPrefix = (options as Record<string, unknown>)["keyPrefix"] ?? "effect-clinical"
  const onUnavailable = (options as Record<string, unknown>)["onUnavailable"] ?? "local"
  const commands = port as Partial<RedisCommands> | undefined
  if (typeof commands?.send !== "function" || typeof commands?.script !== "function") {
    return invalid(
      "redis",
      "must be a port with send and script: TokenStore.ioredis(client) or TokenStore.nodeRedis(client)"
    )
  }
  if (typeof keyPrefix !== "string" || !KEY_PREFIX.test(keyPrefix)) {
    return invalid("keyPrefix", "must be 1 to 64 letters, digits, ':', '_', '.' or '-'")
  }
  const key = sealingKey === undefined ? undefined : sealingKeyBytes(line.reveal(sealingKey))
  if (key !== undefined && !key.ok) return invalid("sealingKey", key.reason)
  if (onUnavailable !== "local" && onUnavailable !== "fail") {
    return invalid("onUnavailable", "must be \"local\" or \"fail\"")
  }
  const timeoutMillis = durationSetting("timeout", timeout, line, 250, { millis: 60_000, text: "1m" })
  if (isRefusal(timeoutMillis)) return timeoutMillis
  const retryAfterMillis = durationSetting("retryAfter", retryAfter, line, 5_000, { millis: 3_600_000, text: "1h" })
  if (isRefusal(retryAfterMillis)) return retryAfterMillis
  return {
    redis: commands as RedisCommands,
    settings: {
      keyPrefix,
      sealingKey: key === undefined ? undefined : sealKey(key.value),
      timeoutMillis,
      retryAfterMillis,
      onUnavailable
    }
  }
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
