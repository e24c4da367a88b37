/** The options of a Redis token store, checked: its key prefix, its bounds, its sealing key. */
import * as Settings from "../config/settings.js"
import type { InvalidConfig } from "../errors.js"
import type { RedisCommands } from "./redisPort.js"
import { sealingKeyBytes } from "./storedEntry.js"
import { type OnUnavailable } from "./tokenStore.js"

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
