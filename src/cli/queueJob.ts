/**
 * `effect-clinical queue ...`: bulk reads over BullMQ, from a terminal or one container per
 * worker. Loaded when a queue command runs, with BullMQ and ioredis (optional peers the
 * application installs: queue.ts names them when they are absent).
 *
 * Settings: the client's `CLINICAL_*`, `CLINICAL_REDIS_URL` (printed without its password, ever)
 * and `CLINICAL_SEALING_KEY` (seals the PersonUids in the jobs, and the token the workers share).
 */
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Redis } from "ioredis"
import { createReadStream } from "node:fs"
import * as ClinicalQueue from "../bullmq.js"
import * as ClinicalClient from "../ClinicalClient.js"
import { derivedKey, sealingKey } from "../internal/token/storedEntry.js"
import type * as PersonData from "../PersonData.js"
import * as TokenStore from "../TokenStore.js"
import { configProvider } from "./environment.js"
import { CliError, ExitCode, usage } from "./outcome.js"
import { boundedLines, MAX_LINE_BYTES, personOfLine, sha256OfFile } from "./persons.js"
import * as Render from "./render.js"
import { appender, collect as collectShards, openShard, shardLine } from "./resultShards.js"

/** What every queue command is given. */
export interface Common {
  readonly settingsFile: Option.Option<string>
  readonly queue: string
}

/** `redis://user:***@host:port/db`: a Redis URL as it may be shown. */
export const shownUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    return Render.printable(parsed.href)
  } catch {
    return "(a URL that does not parse)"
  }
}

interface QueueEnvironment {
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

const queueEnvironment = (file: Option.Option<string>): Effect.Effect<QueueEnvironment, CliError> =>
  Effect.filterOrFail(
    queueSettings(file),
    (environment) => isRedisUrl(Redacted.value(environment.redisUrl)),
    () => usage("CLINICAL_REDIS_URL must be a redis:// or rediss:// URL (its password percent-encoded)")
  )

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
const warner = (about: string) => {
  let toldAt = 0
  return (text: string): void => {
    if (Date.now() - toldAt < 5_000) return
    toldAt = Date.now()
    process.stderr.write(`warning: ${about}: ${Render.printable(text)}\n`)
  }
}

/** An ioredis connection for BullMQ, closed with the scope; its errors told on stderr. */
const connection = (url: Redacted.Redacted<string>, options: Record<string, unknown> = {}) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const client = new Redis(Redacted.value(url), { maxRetriesPerRequest: null, ...options })
      const warn = warner("Redis")
      client.on("error", (error: Error) => warn(hidePassword(error.message, url)))
      return client
    }),
    (client) => Effect.promise(() => client.quit().catch(() => client.disconnect()))
  )

const hidePassword = (text: string, url: Redacted.Redacted<string>): string => {
  try {
    const password = new URL(Redacted.value(url)).password
    return password === "" ? text : text.split(password).join("***").split(decodeURIComponent(password)).join("***")
  } catch {
    return text
  }
}

/**
 * What a one-off command (enqueue, status, ...) gives Redis: a few reconnections over about 3 s,
 * then its commands fail (`Connection is closed`) and the command says Redis cannot be reached,
 * rather than waiting for good. A worker waits out an outage instead (see `work`).
 */
const ONE_OFF = { retryStrategy: (times: number) => (times > 5 ? null : Math.min(times * 200, 1_000)) }

/** The queue's options over a new connection. */
const queueOptions = (common: Common, environment: QueueEnvironment, options: Record<string, unknown> = ONE_OFF) =>
  Effect.map(connection(environment.redisUrl, options), (client) => ({
    connection: client,
    name: common.queue,
    sealingKey: environment.sealingKey
  }))

/** The token store's key: derived from the sealing key, so that the two uses never share bytes. */
const tokenStoreKey = (key: Redacted.Redacted<string>): Either.Either<Redacted.Redacted<Uint8Array>, CliError> =>
  Either.mapBoth(sealingKey(key), {
    onLeft: (reason) => usage(`CLINICAL_SEALING_KEY ${reason}`),
    onRight: (bytes) => derivedKey(bytes, "effect-clinical token store")
  })

const withQueue = <A, E>(
  common: Common,
  run: (options: ClinicalQueue.QueueOptions) => Effect.Effect<A, E>
): Effect.Effect<A, E | CliError> =>
  Effect.scoped(
    Effect.flatMap(queueEnvironment(common.settingsFile), (environment) =>
      Effect.flatMap(queueOptions(common, environment), (options) =>
        Effect.catchIf(run(options), unreachable, () =>
          Effect.fail(
            new CliError({
              message: `cannot reach Redis at ${shownUrl(Redacted.value(environment.redisUrl))}`,
              code: ExitCode.Failure
            })
          ))))
  )

/** Whether a queue command failed because its connection gave up (Redis unreachable). */
const unreachable = (error: unknown): boolean =>
  error instanceof ClinicalQueue.QueueError &&
  /Connection is closed|ECONNREFUSED|ENOTFOUND|ETIMEDOUT/.test(error.detail)

// ---------------------------------------------------------------------------------------------

/** The PersonUids of a file, read line by line (never whole), as `batch` reads them. */
async function* personsOf(path: string): AsyncGenerator<string> {
  for await (const line of boundedLines(createReadStream(path), MAX_LINE_BYTES)) {
    const person = personOfLine(line)
    if (person !== undefined) yield person
  }
}

export interface Enqueue extends Common {
  readonly operation: PersonData.Operation
  readonly personsFile: string
  readonly startDate: string | undefined
  readonly endDate: string | undefined
  readonly attempts: number | undefined
  readonly again: boolean
  readonly fleetConcurrency: number | undefined
  readonly rate: number | undefined
  readonly maxWaiting: number | undefined
}

export const enqueue = (job: Enqueue) =>
  Effect.gen(function*() {
    const sha256 = yield* sha256OfFile(job.personsFile)
    const enqueued = yield* withQueue(job, (options) =>
      ClinicalQueue.enqueue({
        ...options,
        operation: job.operation,
        startDate: job.startDate,
        endDate: job.endDate,
        attempts: job.attempts,
        again: job.again,
        fleetConcurrency: job.fleetConcurrency,
        ratePerSecond: job.rate,
        maxWaiting: job.maxWaiting,
        inputId: [sha256, job.operation.name, job.startDate ?? "", job.endDate ?? ""].join("\n")
      }, personsOf(job.personsFile)))
    yield* Console.log(
      `enqueued ${enqueued.persons} persons into queue "${job.queue}" for ${job.operation.name}: ` +
        `${enqueued.added} added, ${enqueued.present} already there`
    )
  })

// ---------------------------------------------------------------------------------------------

export interface Work extends Common {
  readonly operationNamed: (name: string) => Effect.Effect<PersonData.Operation, CliError>
  readonly workers: number
  readonly concurrency: number
  readonly shards: string
  readonly lockDuration: Duration.Duration | undefined
  readonly stalledInterval: Duration.Duration | undefined
  readonly untilEmpty: boolean
  readonly progressEvery: Duration.Duration
}

/** The client's settings, with `CLINICAL_RETRY_RATE_LIMITED` false unless set: a 429 pauses the whole queue. */
const workerClient = (file: Option.Option<string>) =>
  Layer.unwrapEffect(
    Effect.map(configProvider(file), (provider) =>
      ClinicalClient.layerUndiciConfig().pipe(
        Layer.provide(Layer.setConfigProvider(
          provider.pipe(
            ConfigProvider.orElse(() => ConfigProvider.fromMap(new Map([["CLINICAL_RETRY_RATE_LIMITED", "false"]])))
          )
        ))
      ))
  )

const openShardFile = (directory: string) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () => openShard(directory),
      catch: (error) =>
        usage(`cannot write a shard in ${Render.typed(directory)}: ${(error as NodeJS.ErrnoException).code ?? "error"}`)
    }),
    ({ handle }) => Effect.promise(() => handle.close())
  )

export const work = (job: Work) =>
  Effect.scoped(Effect.gen(function*() {
    const environment = yield* queueEnvironment(job.settingsFile)
    // BullMQ's commands wait in ioredis's queue while Redis is away, and run when it is back.
    const options = yield* queueOptions(job, environment, {})
    const before = yield* ClinicalQueue.status(options, { failuresByKind: false })
    if (before.operation === undefined) {
      return yield* Effect.fail(usage(`queue "${job.queue}" holds no jobs yet: run queue enqueue first`))
    }
    const operation = yield* job.operationNamed(before.operation)
    const { handle } = yield* openShardFile(job.shards)
    const append = appender(handle)
    let done = 0
    let failed = 0
    const sink: ClinicalQueue.Sink = (record) => {
      if (record.outcome === "Success") done++
      else failed++
      return append(
        record.outcome === "Success"
          ? shardLine(record.index, { items: record.result.items })
          : shardLine(record.index, { error: Render.errorJson(record.error) })
      )
    }
    const store = yield* connection(environment.redisUrl, {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false
    })
    // Built in this command's scope: the workers use the client until it ends.
    const client = yield* Layer.build(
      workerClient(job.settingsFile).pipe(
        Layer.provide(TokenStore.layerRedis({
          redis: TokenStore.ioredis(store),
          sealingKey: yield* tokenStoreKey(environment.sealingKey)
        }))
      )
    )
    const warnWork = warner("queue work")
    yield* Effect.forEach(
      Array.from({ length: job.workers }),
      () =>
        ClinicalQueue.worker({
          ...options,
          operation,
          sink,
          // The shards are files we write: a PersonUid the service echoes in an item is not kept.
          redactEchoedSecrets: true,
          // A shard that cannot be written (a full disk), or BullMQ's own trouble: scrubbed of the person.
          onError: (error) => warnWork(hidePassword(error.message, environment.redisUrl)),
          concurrency: job.concurrency,
          lockDuration: job.lockDuration,
          stalledInterval: job.stalledInterval
        }),
      { discard: true }
    ).pipe(Effect.provide(client))
    yield* Console.error(
      `queue work: ${job.workers} worker(s) × ${job.concurrency} on queue "${job.queue}" (${operation.name}), ` +
        `Redis ${shownUrl(Redacted.value(environment.redisUrl))}`
    )
    const progress = (queue: ClinicalQueue.Status, last: boolean) =>
      Console.error(
        `queue work: ${done} done, ${failed} failed here; queue: ${queue.waiting + queue.prioritized} waiting, ` +
          `${queue.active} active, ${queue.delayed} delayed, ${queue.failed} failed` +
          (queue.isPaused ? `; paused: ${Render.printable(queue.pausedBecause ?? "by an operator")}` : "") +
          (last ? `; peak memory ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB` : "")
      )
    // Checked every second (with --until-empty) or at each progress line; a line every progressEvery.
    const every = job.untilEmpty ? Duration.min(job.progressEvery, Duration.seconds(1)) : job.progressEvery
    let toldAt = Date.now()
    while (true) {
      yield* Effect.sleep(every)
      const now = yield* ClinicalQueue.status(options, { failuresByKind: false })
      if (Date.now() - toldAt >= Duration.toMillis(job.progressEvery) || !job.untilEmpty) {
        toldAt = Date.now()
        yield* progress(now, false)
      }
      if (!job.untilEmpty) continue
      if (now.isPaused && now.pausedBecause !== undefined) {
        return yield* Effect.fail(
          new CliError({
            message: `the queue is paused: ${Render.printable(now.pausedBecause)}; then run queue resume`,
            code: ExitCode.CredentialsRefused
          })
        )
      }
      if (now.waiting + now.prioritized + now.active + now.delayed === 0) {
        yield* progress(now, true)
        return
      }
    }
  }))

// ---------------------------------------------------------------------------------------------

export interface StatusJob extends Common {
  readonly json: boolean
  readonly sample: Duration.Duration
}

export const status = (job: StatusJob) =>
  withQueue(job, (options) =>
    Effect.gen(function*() {
      const first = yield* ClinicalQueue.status(options)
      const millis = Duration.toMillis(job.sample)
      const second = millis === 0 ? first : yield* Effect.zipRight(
        Effect.sleep(job.sample),
        ClinicalQueue.status(options)
      )
      const rate = millis === 0 ? undefined : ((second.done - first.done) * 1000) / millis
      const left = second.waiting + second.prioritized + second.active + second.delayed
      const etaMillis = rate === undefined || rate <= 0 ? undefined : (left / rate) * 1000
      const report = {
        queue: job.queue,
        operation: second.operation ?? null,
        persons: second.persons,
        done: second.done,
        waiting: second.waiting + second.prioritized,
        active: second.active,
        delayed: second.delayed,
        failed: second.failed,
        paused: second.isPaused,
        pausedBecause: second.pausedBecause ?? null,
        rateLimitedForMillis: second.rateLimitedForMillis,
        personsPerSecond: rate ?? null,
        etaSeconds: etaMillis === undefined ? null : Math.round(etaMillis / 1000),
        failedByKind: Object.fromEntries(second.failedByKind)
      }
      if (job.json) return yield* Console.log(Render.json(report, 2))
      yield* Console.log(Render.fields([
        ["queue", `${job.queue} (${report.operation ?? "empty"})`],
        ["persons", `${report.done} done of ${report.persons} enqueued`],
        ["waiting", String(report.waiting)],
        ["active", String(report.active)],
        ["delayed", `${report.delayed} (retrying after a failure)`],
        ["failed", String(report.failed)],
        ...second.failedByKind.map(([kind, count]) => [`  ${kind}`, String(count)] as const),
        ["paused", report.paused ? `yes: ${report.pausedBecause ?? "by an operator"}` : "no"],
        ...(report.rateLimitedForMillis > 0
          ? [["rate limited", `${Render.duration(report.rateLimitedForMillis)} more`] as const]
          : []),
        ["rate", rate === undefined ? "not sampled" : `${rate.toFixed(1)} persons/s`],
        ["eta", etaMillis === undefined ? "unknown" : Render.duration(etaMillis)]
      ]))
    }))

export const retryFailed = (common: Common) =>
  withQueue(
    common,
    (options) =>
      Effect.flatMap(ClinicalQueue.retryFailed(options), (count) =>
        Console.log(`${count} failed job(s) of queue "${common.queue}" put back to waiting`))
  )

export const resume = (common: Common) =>
  withQueue(
    common,
    (options) => Effect.zipRight(ClinicalQueue.resume(options), Console.log(`queue "${common.queue}" resumed`))
  )

export interface Collect {
  readonly shards: string
  readonly out: string
}

export const collect = (job: Collect) =>
  Effect.tryPromise({
    try: () => collectShards(job.shards, job.out),
    catch: (error) => {
      const { code = "error", shard } = error as NodeJS.ErrnoException & { readonly shard?: string }
      return code === "EEXIST"
        ? usage(`${Render.typed(job.out)} exists: collect writes a new file`)
        : new CliError({
          message: shard === undefined
            ? `cannot collect ${Render.typed(job.shards)}: ${code}`
            : `cannot collect ${Render.typed(job.shards)}: the shard ${Render.typed(shard)} is ${code}`,
          code: ExitCode.Failure
        })
    }
  }).pipe(Effect.flatMap((collected) =>
    Console.log(
      `collected ${collected.persons} persons (${collected.succeeded} succeeded, ${collected.failed} failed) ` +
        `from ${collected.shards} shard(s) into ${Render.typed(job.out)}; ${collected.duplicates} repeated line(s) ` +
        `dropped, ${collected.missing} position(s) missing, ${collected.unreadable} unreadable line(s)`
    )
  ))
