/**
 * The port to a Redis client (Promises alone) and its adapters for `ioredis` and `redis`, typed
 * structurally: the library imports neither.
 */
import * as Crypto from "node:crypto"
import { type Events, firstConnection } from "./redisReady.js"

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
