/**
 * A queue's settings, checked: its name and prefix, the keys derived from the sealing key, the
 * Redis client, and the names of the keys effect-clinical keeps beside BullMQ's (under the queue's
 * own prefix, so that `queue.obliterate()` removes them with the rest).
 */
import * as Either from "effect/Either"
import { InvalidConfig } from "../../ClinicalError.js"
import { sealingKey } from "../token/storedEntry.js"
import { type JobKeys, jobKeys } from "./jobSeal.js"

/** What effect-clinical uses of an ioredis client (BullMQ's own connection type). */
export interface IoredisClient {
  readonly call: (command: string, ...args: Array<string | Buffer>) => Promise<unknown>
  readonly on: (event: string, listener: (...args: Array<any>) => void) => unknown
}

/** What every form of the queue takes. */
export interface QueueOptions {
  /**
   * An ioredis client the application made (and closes): BullMQ's connection, created with
   * `maxRetriesPerRequest: null` so that commands wait out a Redis restart.
   */
  readonly connection: IoredisClient
  /** The queue's name. Default `effect-clinical`. */
  readonly name?: string | undefined
  /** BullMQ's key prefix. Default `bull`. */
  readonly prefix?: string | undefined
  /**
   * Seals every PersonUid a job carries (AES-256-GCM) and names the jobs: 32 bytes, or their
   * base64 or hex, best `Redacted`. Every process of the queue needs the same key. Required.
   */
  readonly sealingKey: unknown
}

export interface Settings {
  readonly name: string
  readonly prefix: string
  readonly keys: JobKeys
  readonly connection: IoredisClient
  /** Hash of what the queue is for: its operation, key check, latest run, why it was paused. */
  readonly metaKey: string
  /** Held by the enqueue under way: one at a time. */
  readonly lockKey: string
  /** The run an input belongs to, by the hash of the input's id. */
  readonly inputKey: (inputHash: string) => string
  /** A run's record (see `runRecord`). */
  readonly runKey: (run: number) => string
  /** A run's counts (done, failed), kept by the workers. */
  readonly countKey: (run: number) => string
  /** A run's slots, one per position (a named run). */
  readonly slotsKey: (run: number) => string
  /** The persons enqueued, done and failed in the unnamed run (sets of fingerprints). */
  readonly personsKey: (run: number) => string
  readonly doneKey: (run: number) => string
  readonly failedKey: (run: number) => string
}

const NAME = /^[A-Za-z0-9_.-]{1,64}$/

const invalid = (setting: string, reason: string) => new InvalidConfig({ setting, reason })

/** The settings of `options`, or the `InvalidConfig` naming the one refused (never its value). */
export const settingsOf = (options: QueueOptions): Either.Either<Settings, InvalidConfig> =>
  Either.gen(function*() {
    if (typeof options !== "object" || options === null) {
      return yield* Either.left(invalid("options", "must be an object with connection and sealingKey"))
    }
    const connection = options.connection
    if (typeof connection?.call !== "function" || typeof connection?.on !== "function") {
      return yield* Either.left(
        invalid("connection", "must be an ioredis client (new Redis(url, { maxRetriesPerRequest: null }))")
      )
    }
    const name = options.name ?? "effect-clinical"
    if (typeof name !== "string" || !NAME.test(name)) {
      return yield* Either.left(invalid("name", "must be 1 to 64 letters, digits, '_', '.' or '-'"))
    }
    const prefix = options.prefix ?? "bull"
    if (typeof prefix !== "string" || !NAME.test(prefix)) {
      return yield* Either.left(invalid("prefix", "must be 1 to 64 letters, digits, '_', '.' or '-'"))
    }
    if (options.sealingKey === undefined) {
      return yield* Either.left(
        invalid("sealingKey", "is required: jobs carry PersonUids, sealed (make one with `openssl rand -base64 32`)")
      )
    }
    const key = yield* Either.mapLeft(sealingKey(options.sealingKey), (reason) => invalid("sealingKey", reason))
    const metaKey = `${prefix}:${name}:effect-clinical`
    return {
      name,
      prefix,
      keys: jobKeys(key, prefix, name),
      connection,
      metaKey,
      lockKey: `${metaKey}:enqueuing`,
      inputKey: (inputHash) => `${metaKey}:input:${inputHash}`,
      runKey: (run) => `${metaKey}:run:${run}`,
      countKey: (run) => `${metaKey}:run:${run}:count`,
      slotsKey: (run) => `${metaKey}:run:${run}:slots`,
      personsKey: (run) => `${metaKey}:run:${run}:persons`,
      doneKey: (run) => `${metaKey}:run:${run}:done`,
      failedKey: (run) => `${metaKey}:run:${run}:failed`
    }
  })
