/**
 * The queue commands' Redis: the settings (`CLINICAL_REDIS_URL`, shown as scheme, host, port and db,
 * never a password; `CLINICAL_SEALING_KEY`), the connections and their bounds, and what a failure
 * of theirs says (Redis out of reach, a key that does not open the queue, never a secret).
 */
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { Redis } from "ioredis"
import { isWrongKey } from "../../core/queue/queueMeta.js"
import { ClinicalQueue } from "../bullmq.js"
import type * as ClinicalError from "../ClinicalError.js"
import { redactor } from "../internal/redaction/redaction.js"
import { derivedKey, sealingKey } from "../internal/token/storedEntry.js"
import { configProvider } from "./environment.js"
import { CliError, ExitCode, usage } from "./outcome.js"
import * as Render from "./render.js"

/** What every queue command is given. */
export interface Common {
  readonly settingsFile: Option.Option<string>
  readonly queue: string
}

/** A Redis URL as it may be shown: its scheme, host, port and database, nothing else (no user, no password, no query). */
export const shownUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    const db = /^\/\d{1,5}$/.test(parsed.pathname) ? parsed.pathname : ""
    return Render.printable(`${parsed.protocol}//${parsed.host}${db}`)
  } catch {
    return "(a URL that does not parse)"
  }
}

/** Query options of a Redis URL that hold a secret (ioredis reads any option there: `?password=`). */
const SECRET_OPTION = /pass|secret|token|key/i

/** What a Redis URL holds that is secret: its password, and the values of secret query options. */
const secretsOf = (url: string): Array<string> => {
  try {
    const parsed = new URL(url)
    const query = [...parsed.searchParams].filter(([name]) => SECRET_OPTION.test(name)).map(([, value]) => value)
    return [parsed.password, decodeURIComponent(parsed.password), ...query].filter((secret) => secret.length > 0)
  } catch {
    return []
  }
}

/** `text` (a Redis or BullMQ error) without the URL's secrets, in any form they may be echoed. */
export const hideSecrets = (text: string, url: Redacted.Redacted<string>): string =>
  redactor(secretsOf(Redacted.value(url)))(text)

export interface QueueEnvironment {
  readonly redisUrl: Redacted.Redacted<string>
  readonly sealingKey: Redacted.Redacted<string>
}

/** Whether ioredis can read `url`: redis: or rediss:, its credentials percent-decodable. */
const isRedisUrl = (url: string): boolean => {
  try {
    const parsed = new URL(url)
    decodeURIComponent(parsed.username)
    decodeURIComponent(parsed.password)
    return parsed.protocol === "redis:" || parsed.protocol === "rediss:"
  } catch {
    return false
  }
}

/** Settings read (the queue's, the dashboard's), refused with a usage error when ioredis cannot read their Redis URL. */
export const withRedisUrlChecked = <A extends { readonly redisUrl: Redacted.Redacted<string> }>(
  settings: Effect.Effect<A, CliError>
): Effect.Effect<A, CliError> =>
  Effect.filterOrFail(
    settings,
    ({ redisUrl }) => isRedisUrl(Redacted.value(redisUrl)),
    () => usage("CLINICAL_REDIS_URL must be a redis:// or rediss:// URL (its password percent-encoded)")
  )

export const queueEnvironment = (file: Option.Option<string>): Effect.Effect<QueueEnvironment, CliError> =>
  withRedisUrlChecked(queueSettings(file))

const queueSettings = (file: Option.Option<string>): Effect.Effect<QueueEnvironment, CliError> =>
  Effect.flatMap(configProvider(file), (provider) =>
    Effect.withConfigProvider(
      Effect.all({
        redisUrl: Config.redacted("CLINICAL_REDIS_URL"),
        sealingKey: Config.redacted("CLINICAL_SEALING_KEY")
      }),
      provider
    ).pipe(
      Effect.mapError(() =>
        usage(
          "queue commands need CLINICAL_REDIS_URL (redis://host:port) and CLINICAL_SEALING_KEY " +
            "(32 random bytes as base64: `openssl rand -base64 32`), the same for every process of the queue"
        )
      )
    ))

/**
 * A warning on stderr, made printable, at most one every 5 s for each `about`: a Redis that is gone,
 * or a sink that cannot write, would otherwise say so for every job.
 */
export const warner = (about: string) => {
  let toldAt = 0
  return (text: string): void => {
    if (Date.now() - toldAt < 5_000) return
    toldAt = Date.now()
    // At a terminal, over a progress bar's line (the bar is drawn again below it).
    const clear = process.stderr.isTTY === true ? "\r\x1b[K" : ""
    process.stderr.write(`${clear}warning: ${about}: ${Render.printable(text)}\n`)
  }
}

/**
 * A line of our own on stderr, made printable. Not through Console.error, where the command line
 * hides what looks like a typed value between quotes (an apostrophe in a reason would cut it).
 */
export const say = (text: string) => Effect.sync(() => void process.stderr.write(`${Render.printable(text)}\n`))

/**
 * An ioredis connection for BullMQ, closed with the scope (a Redis that does not answer its QUIT
 * is left after a second); its errors told on stderr without the URL's secrets.
 */
export const connection = (url: Redacted.Redacted<string>, options: Record<string, unknown> = {}) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const client = new Redis(Redacted.value(url), { maxRetriesPerRequest: null, ...options })
      const warn = warner("Redis")
      client.on("error", (error: Error) => warn(hideSecrets(error.message, url)))
      return client
    }),
    (client) =>
      Effect.promise(() =>
        Promise.race([client.quit().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 1_000))])
          .then(() => client.disconnect())
      )
  )

/** Longest a one-off command waits for any one answer of Redis. */
export const ONE_OFF_ANSWER_MILLIS = 10_000

/**
 * What a one-off command (enqueue, status, ...) gives Redis: a few reconnections over about 3 s,
 * then its commands fail (`Connection is closed`), and no command waits more than 10 s for its
 * answer (a Redis that takes the connection and never answers, or one stopped with SIGSTOP): the
 * command says Redis cannot be reached rather than waiting for good. A worker waits out an outage
 * instead (see `work`).
 */
const ONE_OFF = {
  retryStrategy: (times: number) => (times > 5 ? null : Math.min(times * 200, 1_000)),
  connectTimeout: ONE_OFF_ANSWER_MILLIS,
  commandTimeout: ONE_OFF_ANSWER_MILLIS
}

/** The queue's options over a new connection. */
export const queueOptions = (
  common: Common,
  environment: QueueEnvironment,
  options: Record<string, unknown> = ONE_OFF
) =>
  Effect.map(connection(environment.redisUrl, options), (client) => ({
    connection: client,
    name: common.queue,
    sealingKey: environment.sealingKey
  }))

/** The token store's key: derived from the sealing key, so that the two uses never share bytes. */
export const tokenStoreKey = (
  key: Redacted.Redacted<string>
): Either.Either<Redacted.Redacted<Uint8Array>, CliError> =>
  Either.mapBoth(sealingKey(key), {
    onLeft: (reason) => usage(`CLINICAL_SEALING_KEY ${reason}`),
    onRight: (bytes) => derivedKey(bytes, "effect-clinical token store")
  })

/**
 * A queue command refused because CLINICAL_SEALING_KEY is not the queue's key (it opens none of the
 * queue's records): said as the setting the user gave, exit code 5; anything else `undefined`.
 */
export const keyRefused = (error: unknown): CliError | undefined =>
  isWrongKey(error)
    ? new CliError({
      message: `CLINICAL_SEALING_KEY ${(error as ClinicalError.InvalidConfig).reason}`,
      code: ExitCode.KeyRefused
    })
    : undefined

/** Why a queue command failed, when its connection gave up (Redis unreachable, or silent). */
export const unreachable = (error: unknown): string | undefined => {
  if (!(error instanceof ClinicalQueue.QueueError)) return undefined
  if (/Command timed out|did not answer within/.test(error.detail)) {
    return `it did not answer within ${ONE_OFF_ANSWER_MILLIS / 1000} s`
  }
  if (
    /Connection is closed|Command aborted|ECONNREFUSED|ECONNRESET|ENOTFOUND|ETIMEDOUT|EHOSTUNREACH/.test(error.detail)
  ) {
    return "the connection failed"
  }
  return undefined
}

/**
 * A queue command's failures as they may be told: a Redis that cannot be reached said so, naming
 * it as it may be shown; a Redis or BullMQ error without the URL's secrets, in any form.
 */
export const told = (environment: QueueEnvironment) => <E>(error: E): E | CliError => {
  const wrongKey = keyRefused(error)
  if (wrongKey !== undefined) return wrongKey
  const why = unreachable(error)
  if (why !== undefined) {
    return new CliError({
      message: `cannot reach Redis at ${shownUrl(Redacted.value(environment.redisUrl))}: ${why}`,
      code: ExitCode.Failure
    })
  }
  return error instanceof ClinicalQueue.QueueError
    ? new ClinicalQueue.QueueError({
      operation: error.operation,
      detail: hideSecrets(error.detail, environment.redisUrl)
    }) as E
    : error
}

/** `run` over the queue's options (a one-off connection), its failures {@link told}. */
export const withQueue = <A, E>(
  common: Common,
  run: (options: ClinicalQueue.QueueOptions, environment: QueueEnvironment) => Effect.Effect<A, E, Scope.Scope>
): Effect.Effect<A, E | CliError> =>
  Effect.scoped(
    Effect.flatMap(queueEnvironment(common.settingsFile), (environment) =>
      Effect.flatMap(
        queueOptions(common, environment),
        (options) => Effect.mapError(run(options, environment), told(environment))
      ))
  )
