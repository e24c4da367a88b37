/**
 * `effect-clinical queue ...`: bulk reads over BullMQ, from a terminal or one container per
 * worker. Loaded when a queue command runs, with BullMQ and ioredis (optional peers the
 * application installs: queue.ts names them when they are absent).
 *
 * Settings: the client's `CLINICAL_*`, `CLINICAL_REDIS_URL` (shown as scheme, host, port and db,
 * never a password) and `CLINICAL_SEALING_KEY` (seals the PersonUids in the jobs, and the token the
 * workers share).
 */
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import type * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { Redis } from "ioredis"
import { createReadStream } from "node:fs"
import { unlink } from "node:fs/promises"
import * as Metrics from "../../core/observability/metrics.js"
import { perSecond, timeLeftMillis } from "../../core/pace.js"
import { isWrongKey } from "../../core/queue/queueMeta.js"
import { recordDepth } from "../../core/queue/queueWorker.js"
import { ClinicalQueue } from "../bullmq.js"
import * as ClinicalClient from "../ClinicalClient.js"
import type * as ClinicalError from "../ClinicalError.js"
import { gauge } from "../internal/observability/telemetry.js"
import { meter } from "../internal/queue/jobProcessor.js"
import { redactor } from "../internal/redaction/redaction.js"
import { derivedKey, sealingKey } from "../internal/token/storedEntry.js"
import type * as PersonData from "../PersonData.js"
import * as TokenStore from "../TokenStore.js"
import { configProvider } from "./environment.js"
import type { Gauges } from "./observed.js"
import { CliError, ExitCode, usage } from "./outcome.js"
import { boundedLines, MAX_LINE_BYTES, personOfLine, sha256OfFile } from "./persons.js"
import * as Render from "./render.js"
import { collect as collectShards, type Collected, openShard, shardDirectory, shardLine } from "./resultShards.js"

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

/** Settings read (the queue's, the dashboard's), refused with a usage error when ioredis cannot read their Redis URL. */
export const withRedisUrlChecked = <A extends { readonly redisUrl: Redacted.Redacted<string> }>(
  settings: Effect.Effect<A, CliError>
): Effect.Effect<A, CliError> =>
  Effect.filterOrFail(
    settings,
    ({ redisUrl }) => isRedisUrl(Redacted.value(redisUrl)),
    () => usage("CLINICAL_REDIS_URL must be a redis:// or rediss:// URL (its password percent-encoded)")
  )

const queueEnvironment = (file: Option.Option<string>): Effect.Effect<QueueEnvironment, CliError> =>
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
const ONE_OFF_ANSWER_MILLIS = 10_000

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
const queueOptions = (common: Common, environment: QueueEnvironment, options: Record<string, unknown> = ONE_OFF) =>
  Effect.map(connection(environment.redisUrl, options), (client) => ({
    connection: client,
    name: common.queue,
    sealingKey: environment.sealingKey
  }))

/** The token store's key: derived from the sealing key, so that the two uses never share bytes. */
const tokenStoreKey = (
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
const told = (environment: QueueEnvironment) => <E>(error: E): E | CliError => {
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
const withQueue = <A, E>(
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

/** What names a file's enqueue: its content, the operation and the date range (another range is another run). */
export const inputIdOf = (sha256: string, job: Pick<Enqueue, "operation" | "startDate" | "endDate">): string =>
  [sha256, job.operation.name, job.startDate ?? "", job.endDate ?? ""].join("\n")

export const enqueue = (job: Enqueue) =>
  Effect.gen(function*() {
    const sha256 = yield* sha256OfFile(job.personsFile)
    const waiting = warner("queue enqueue")
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
        onWaiting: (count) =>
          waiting(`${count} jobs waiting, --max-waiting ${job.maxWaiting}: waiting for the workers to take some`),
        inputId: inputIdOf(sha256, job)
      }, personsOf(job.personsFile)))
    yield* Console.log(
      `enqueued ${enqueued.persons} persons into queue "${job.queue}" for ${job.operation.name} (run ${enqueued.run}): ` +
        `${enqueued.added} added, ${enqueued.present} already there`
    )
  })

// ---------------------------------------------------------------------------------------------

const paused = gauge(Metrics.queuePaused)
const redisUp = gauge(Metrics.queueRedisUp)
const runPersons = gauge(Metrics.queueRun)

/**
 * The queue's gauges from a status read now: its depth by state, whether it is paused, its latest
 * run's persons (the fleet's). What `--metrics-port` serves is read for each scrape (a second old at most).
 */
const refreshGauges = (options: ClinicalQueue.QueueOptions, queue: string) =>
  Effect.flatMap(ClinicalQueue.status(options, { failuresByKind: false }), (now) => {
    const persons = Metric.tagged(runPersons, "queue", queue)
    const run = now.run === undefined ? [] : [
      ["enqueued", now.run.persons],
      ["done", now.run.done],
      ["failed", now.run.failed]
    ] as const
    return Effect.zipRight(
      Effect.sync(() => recordDepth(meter, queue, now)),
      Effect.all([
        Metric.set(Metric.tagged(paused, "queue", queue), now.isPaused ? 1 : 0),
        ...run.map(([state, n]) => Metric.set(Metric.tagged(persons, "state", state), n))
      ], { discard: true })
    )
  })

/** {@link refreshGauges} as the metrics' refresh: whether it could read Redis goes to `clinical_queue_redis_up`. */
const gaugesFrom = (options: ClinicalQueue.QueueOptions, queue: string) => () =>
  Effect.runPromise(
    refreshGauges(options, queue).pipe(
      Effect.zipRight(Metric.set(Metric.tagged(redisUp, "queue", queue), 1)),
      Effect.tapErrorCause(() => Metric.set(Metric.tagged(redisUp, "queue", queue), 0))
    )
  )

export interface Work extends Common {
  /** Where the queue's gauges are refreshed from, before metrics are read. */
  readonly gauges: Gauges
  /** The operations a worker reads: each job names its own. */
  readonly operations: ReadonlyArray<PersonData.Operation>
  readonly workers: number
  readonly concurrency: number
  readonly shards: string
  readonly lockDuration: Duration.Duration | undefined
  readonly stalledInterval: Duration.Duration | undefined
  readonly untilEmpty: boolean
  readonly progressEvery: Duration.Duration
  /** Whether stderr is a terminal: a bar redrawn in place, else a line each time. */
  readonly interactive: boolean
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

/**
 * The command line's sink: each record a line in this process's shard of its run (opened when the
 * run's first record comes), whole on disk before the job is marked done; the counts of what
 * landed.
 */
const shardSink = (directory: string, queue: string) => {
  const shards = new Map<string, ReturnType<typeof openShard>>()
  const counts = { done: 0, failed: 0 }
  const sink: ClinicalQueue.Sink = async (record) => {
    let shard = shards.get(record.runId)
    if (shard === undefined) {
      shard = openShard(directory, queue, record.run, record.runId)
      shards.set(record.runId, shard)
      // A shard that could not be opened is tried again with the next record.
      shard.catch(() => shards.delete(record.runId))
    }
    const { lines } = await shard
    await lines.append(
      record.outcome === "Success"
        ? shardLine(record.index, record.operation, { items: record.result.items })
        : shardLine(record.index, record.operation, { error: Render.errorJson(record.error), at: Date.now() })
    )
    // Counted once written: a line the disk refused is no person done.
    if (record.outcome === "Success") counts.done++
    else counts.failed++
  }
  const close = () =>
    Effect.promise(() =>
      Promise.all([...shards.values()].map((shard) => shard.then(({ handle }) => handle.close(), () => undefined)))
    )
  return { sink, counts, close }
}

/** Persons of the queue not done yet: waiting, active or retrying. */
const leftIn = (now: ClinicalQueue.Status): number => now.waiting + now.prioritized + now.active + now.delayed

/** The persons finished in the status's run, by the whole fleet. */
const finishedIn = (now: ClinicalQueue.Status): number => (now.run?.done ?? 0) + (now.run?.failed ?? 0)

/** The whole fleet's pace over the run from `before` to `after`, `millis` apart; none across two runs. */
const fleetPace = (before: ClinicalQueue.Status, after: ClinicalQueue.Status, millis: number): number | undefined =>
  before.run?.run === after.run?.run ? perSecond(finishedIn(before), finishedIn(after), millis) : undefined

/**
 * One progress line of `queue work`: this process's counts, time and rate; the run's (the whole
 * fleet's) with, when an earlier line of the same run gives its pace, the time left; the queue's.
 */
export const progressLine = (
  counts: { readonly done: number; readonly failed: number },
  elapsedMillis: number,
  now: ClinicalQueue.Status,
  earlier: { readonly status: ClinicalQueue.Status; readonly millis: number } | undefined
): string => {
  const parts = progressParts(counts, elapsedMillis, now, earlier)
  return `queue work: ${parts.here}${parts.run === "" ? "" : `; ${parts.run}`}; queue: ${parts.queue}${parts.notes}`
}

/**
 * The progress bar's text at a terminal: the run (the fleet's) first, then this process's counts,
 * then what needs an eye (a pause, a worker that stopped answering); the bar is the run's share done.
 */
export const progressBar = (
  counts: { readonly done: number; readonly failed: number },
  elapsedMillis: number,
  now: ClinicalQueue.Status,
  earlier: { readonly status: ClinicalQueue.Status; readonly millis: number } | undefined,
  columns: number | undefined
): string => {
  const parts = progressParts(counts, elapsedMillis, now, earlier)
  const run = now.run
  const fraction = run === undefined || run.persons === 0 ? 0 : (run.done + run.failed) / run.persons
  return Render.bar(fraction, `${parts.run === "" ? "" : `${parts.run}; `}${parts.here}${parts.notes}`, columns)
}

/** A progress report's parts: this process's, the run's, the queue's, and what needs an eye. */
const progressParts = (
  counts: { readonly done: number; readonly failed: number },
  elapsedMillis: number,
  now: ClinicalQueue.Status,
  earlier: { readonly status: ClinicalQueue.Status; readonly millis: number } | undefined
) => {
  const here = perSecond(0, counts.done + counts.failed, elapsedMillis) ?? 0
  const fleetRate = earlier === undefined ? undefined : fleetPace(earlier.status, now, elapsedMillis - earlier.millis)
  const timeLeft = timeLeftMillis(leftIn(now), fleetRate)
  return {
    here: `${counts.done} done, ${counts.failed} failed here in ${Render.duration(elapsedMillis)} (${
      here.toFixed(1)
    }/s)`,
    run: now.run === undefined
      ? ""
      : `run ${now.run.run}: ${now.run.done} done, ${now.run.failed} failed of ${now.run.persons}` +
        (now.run.enqueued ? "" : " enqueued so far") +
        (fleetRate === undefined ? "" : ` (${fleetRate.toFixed(1)}/s)`) +
        (timeLeft === undefined ? "" : `, about ${Render.duration(timeLeft)} left`),
    queue: `${
      now.waiting + now.prioritized
    } waiting, ${now.active} active, ${now.delayed} delayed, ${now.failed} failed`,
    notes: (now.isPaused ? `; paused: ${Render.printable(now.pausedBecause ?? "by an operator")}` : "") +
      (now.unanswered === undefined ? "" : `; ${unansweredText(now.unanswered)}`)
  }
}

/** What a progress line or the status table says of active jobs whose worker stopped answering. */
const unansweredText = (unanswered: NonNullable<ClinicalQueue.Status["unanswered"]>): string =>
  `${unanswered.jobs} active held by a worker that stopped answering: ` +
  `taken back within ${Render.duration(unanswered.backWithinMillis)}`

/** Whether `--until-empty` is done: nothing waiting, active or retrying, and no enqueue still adding. */
export const isDrained = (now: ClinicalQueue.Status): boolean => leftIn(now) === 0 && !now.enqueuing

export const work = (job: Work) =>
  Effect.flatMap(
    queueEnvironment(job.settingsFile),
    (environment) => Effect.mapError(working(job, environment), told(environment))
  )

const working = (job: Work, environment: QueueEnvironment) =>
  Effect.scoped(Effect.gen(function*() {
    // BullMQ's commands wait in ioredis's queue while Redis is away, and run when it is back.
    const options = yield* queueOptions(job, environment, {})
    job.gauges.refreshWith(gaugesFrom(options, job.queue))
    const before = yield* ClinicalQueue.status(options, { failuresByKind: false })
    // Each job names its operation (sealed): the queue's records only say whether there is any.
    const operation = before.run?.operation ?? before.operation
    if (operation === undefined && before.waiting + before.prioritized + before.delayed + before.failed === 0) {
      return yield* Effect.fail(usage(`queue "${job.queue}" holds no jobs yet: run queue enqueue first`))
    }
    // Checked now, not at the first result: a directory that cannot be written is a usage error.
    yield* Effect.tryPromise({
      try: () => shardDirectory(job.shards),
      catch: (error) =>
        usage(
          `cannot write a shard in ${Render.typed(job.shards)}: ${(error as NodeJS.ErrnoException).code ?? "error"}`
        )
    })
    const shards = shardSink(job.shards, job.queue)
    yield* Effect.addFinalizer(shards.close)
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
          operation: job.operations,
          sink: shards.sink,
          // The shards are files we write: a PersonUid the service echoes in an item is not kept.
          redactEchoedSecrets: true,
          // A shard that cannot be written (a full disk), or BullMQ's own trouble: scrubbed of the person.
          onError: (error) => warnWork(hideSecrets(error.message, environment.redisUrl)),
          concurrency: job.concurrency,
          lockDuration: job.lockDuration,
          stalledInterval: job.stalledInterval
        }),
      { discard: true }
    ).pipe(Effect.provide(client))
    yield* say(
      `queue work: ${job.workers} worker(s) × ${job.concurrency} on queue "${job.queue}" (${operation ?? "jobs"}), ` +
        `Redis ${shownUrl(Redacted.value(environment.redisUrl))}`
    )
    // Checked every second (with --until-empty) or at each progress line; a line every progressEvery.
    const every = job.untilEmpty ? Duration.min(job.progressEvery, Duration.seconds(1)) : job.progressEvery
    const startedAt = Date.now()
    let toldAt = startedAt
    // The last line's status and time: the fleet's pace is measured from one line to the next.
    let earlier: { readonly status: ClinicalQueue.Status; readonly millis: number } | undefined
    /** A report of `now`, as `render` writes it from the last report's status and time. */
    const report = (
      now: ClinicalQueue.Status,
      render: (millis: number, before: typeof earlier) => string
    ): string => {
      const millis = Date.now() - startedAt
      const text = render(millis, earlier)
      earlier = { status: now, millis }
      return text
    }
    const line = (now: ClinicalQueue.Status) =>
      report(now, (millis, before) => progressLine(shards.counts, millis, now, before))
    // At a terminal, a bar redrawn in place; else a line each time.
    let barShown = false
    const tell = (now: ClinicalQueue.Status) => {
      if (!job.interactive) return say(line(now))
      const text = report(now, (millis, before) =>
        progressBar(shards.counts, millis, now, before, process.stderr.columns))
      return Effect.sync(() => {
        barShown = true
        process.stderr.write(text)
      })
    }
    // Whatever ends the command (a pause, a signal, a failure) says so below the bar, not on its line.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => void (barShown && process.stderr.write("\n")))
    )
    while (true) {
      yield* Effect.sleep(every)
      const now = yield* ClinicalQueue.status(options, { failuresByKind: false })
      if (Date.now() - toldAt >= Duration.toMillis(job.progressEvery) || !job.untilEmpty) {
        toldAt = Date.now()
        yield* tell(now)
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
      if (isDrained(now)) {
        // The bar, full, stays on its line; the summary below it.
        if (job.interactive) {
          yield* Effect.zipRight(tell(now), Effect.sync(() => void process.stderr.write("\n")))
          barShown = false
        }
        yield* say(`${line(now)}; peak memory ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB`)
        return
      }
    }
  }))

// ---------------------------------------------------------------------------------------------

export interface StatusJob extends Common {
  readonly gauges: Gauges
  readonly json: boolean
  readonly sample: Duration.Duration
}

export const status = (job: StatusJob) =>
  withQueue(job, (options, environment) =>
    Effect.gen(function*() {
      // Served until stopped, the gauges are read over a connection that waits out a Redis restart
      // (a one-off command's gives up after a few seconds), each read bounded.
      job.gauges.refreshWith(gaugesFrom(
        job.gauges.scraped
          ? yield* queueOptions(job, environment, { maxRetriesPerRequest: 1, commandTimeout: ONE_OFF_ANSWER_MILLIS })
          : options,
        job.queue
      ))
      const first = yield* ClinicalQueue.status(options)
      const millis = Duration.toMillis(job.sample)
      const second = millis === 0 ? first : yield* Effect.zipRight(
        Effect.sleep(job.sample),
        ClinicalQueue.status(options)
      )
      const rate = fleetPace(first, second, millis)
      const etaMillis = timeLeftMillis(leftIn(second), rate)
      // Failure kinds are read from Redis: whoever can write it can write anything there.
      const failedByKind = second.failedByKind.map(([kind, count]) => [Render.printable(kind), count] as const)
      const report = {
        queue: job.queue,
        operation: second.operation ?? null,
        run: second.run ?? null,
        enqueuing: second.enqueuing,
        waiting: second.waiting + second.prioritized,
        active: second.active,
        delayed: second.delayed,
        failed: second.failed,
        paused: second.isPaused,
        pausedBecause: second.pausedBecause ?? null,
        rateLimitedForMillis: second.rateLimitedForMillis,
        personsPerSecond: rate ?? null,
        etaSeconds: etaMillis === undefined ? null : Math.round(etaMillis / 1000),
        failedByKind: Object.fromEntries(failedByKind),
        unanswered: second.unanswered ?? null
      }
      yield* Console.log(job.json ? Render.json(report, 2) : statusTable(job.queue, second, report, failedByKind))
      // A scrape endpoint serves the queue's gauges, read at each scrape, until the command is stopped.
      if (job.gauges.scraped) return yield* Effect.never
    }))

/** `queue status`'s table. */
const statusTable = (
  queue: string,
  second: ClinicalQueue.Status,
  report: {
    readonly operation: string | null
    readonly waiting: number
    readonly active: number
    readonly delayed: number
    readonly failed: number
    readonly paused: boolean
    readonly pausedBecause: string | null
    readonly rateLimitedForMillis: number
    readonly personsPerSecond: number | null
    readonly etaSeconds: number | null
  },
  failedByKind: ReadonlyArray<readonly [string, number]>
): string => {
  const rate = report.personsPerSecond ?? undefined
  const etaMillis = report.etaSeconds === null ? undefined : report.etaSeconds * 1000
  const run = second.run
  return Render.fields([
    ["queue", `${queue} (${report.operation ?? "empty"})`],
    [
      "run",
      run === undefined
        ? "none"
        : `${run.run}: ${run.done} done, ${run.failed} failed of ${run.persons} enqueued` +
          (run.enqueued ? "" : second.enqueuing ? " (still enqueuing)" : " (its enqueue stopped: enqueue again)")
    ],
    ["waiting", String(report.waiting)],
    ["active", String(report.active)],
    ["delayed", `${report.delayed} (retrying after a failure)`],
    ["failed", String(report.failed)],
    ...failedByKind.map(([kind, count]) => [`  ${kind}`, String(count)] as const),
    ...(second.unanswered === undefined ? [] : [["unanswered", unansweredText(second.unanswered)] as const]),
    ["paused", report.paused ? `yes: ${report.pausedBecause ?? "by an operator"}` : "no"],
    ...(report.rateLimitedForMillis > 0
      ? [["rate limited", `${Render.duration(report.rateLimitedForMillis)} more`] as const]
      : []),
    ["rate", rate === undefined ? "not sampled" : `${rate.toFixed(1)} persons/s`],
    ["eta", etaMillis === undefined ? "unknown" : Render.duration(etaMillis)]
  ])
}

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

// ---------------------------------------------------------------------------------------------

export interface Collect extends Common {
  readonly shards: string
  readonly out: string
  readonly run: number | undefined
  readonly persons: number | undefined
}

/** The run `collect` merges, and its size: as given, else from the queue's record in Redis. */
const runToCollect = (job: Collect) =>
  job.run !== undefined && job.persons !== undefined
    ? Effect.succeed({ run: job.run, id: undefined, persons: job.persons, operation: undefined, enqueued: true })
    : withQueue(job, (options) =>
      Effect.flatMap(ClinicalQueue.status(options, { failuresByKind: false, run: job.run }), (status) =>
        status.run === undefined
          ? Effect.fail(usage(
            job.run === undefined
              ? `queue "${job.queue}" records no run: give --run and --persons`
              : `queue "${job.queue}" no longer records run ${job.run}: give --persons too`
          ))
          : !status.run.named
          ? Effect.fail(usage(
            `run ${status.run.run} of queue "${job.queue}" is its unnamed run (persons enqueued as they come, ` +
              "without positions): collect merges a named input's run"
          ))
          : Effect.succeed({
            run: status.run.run,
            id: status.run.id,
            persons: job.persons ?? status.run.persons,
            operation: status.run.operation,
            enqueued: status.run.enqueued
          })))

const collectFailure = (job: Collect) => (error: unknown): CliError => {
  const { code = "error", out, runs, shard } = error as NodeJS.ErrnoException & {
    readonly shard?: string
    readonly out?: boolean
    readonly runs?: ReadonlyArray<string>
  }
  if (code === "EEXIST") return usage(`${Render.typed(job.out)} exists: collect writes a new file`)
  if (code === "ERUNS") {
    return usage(
      `${Render.typed(job.shards)} holds shards of ${runs?.length} runs numbered ${job.run} of queue "${job.queue}" ` +
        `(ids ${
          runs?.join(", ")
        }): collect with CLINICAL_REDIS_URL set, which knows the run's id, or move the others away`
    )
  }
  return new CliError({
    message: out === true
      ? `cannot write ${Render.typed(job.out)}: ${code}`
      : shard === undefined
      ? `cannot collect ${Render.typed(job.shards)}: ${code}`
      : `cannot collect ${Render.typed(job.shards)}: the shard ${Render.typed(shard)} is ${code}`,
    code: out === true && code === "ENOENT" ? ExitCode.Usage : ExitCode.Failure
  })
}

/** Why a collected run is not whole, or `undefined` when every person is there and succeeded. */
const incomplete = (collected: Collected): string | undefined => {
  if (collected.beyond > 0) {
    return `${Render.count(collected.beyond, "line")} of the run name positions past its ${collected.persons} ` +
      "persons: its size as given or recorded is not the run's (give --persons)"
  }
  if (collected.missing > 0) {
    return `${collected.missing} of ${collected.persons} persons are missing: run queue work until the queue is ` +
      "empty (queue status), and copy every worker's shards into the shards directory"
  }
  if (collected.failed > 0) {
    return `${Render.count(collected.failed, "person")} failed: queue retry-failed puts them back, or see their ` +
      "errors in the file"
  }
  return undefined
}

export const collect = (job: Collect) =>
  Effect.gen(function*() {
    const target = yield* runToCollect(job)
    if (!target.enqueued) {
      yield* say(
        `warning: the enqueue of run ${target.run} has not finished: ${target.persons} persons enqueued so far`
      )
    }
    let created = false
    const collected = yield* Effect.tryPromise({
      try: (signal) =>
        collectShards(job.shards, job.out, {
          queue: job.queue,
          run: target.run,
          runId: target.id,
          persons: target.persons,
          operation: target.operation,
          signal,
          created: () => (created = true)
        }),
      catch: collectFailure(job)
    }).pipe(
      // SIGTERM or Ctrl-C mid-merge: the merged file, not whole, is removed before the process ends.
      Effect.onInterrupt(() =>
        Effect.promise(() => (created ? unlink(job.out).catch(() => undefined) : Promise.resolve()))
      )
    )
    yield* Console.log(
      `collected ${collected.succeeded + collected.failed} of ${collected.persons} persons of run ${target.run}` +
        `${collected.operation === undefined ? "" : ` (${collected.operation})`} ` +
        `(${collected.succeeded} succeeded, ${collected.failed} failed) from ${collected.shards} shard(s) into ` +
        `${Render.typed(job.out)}; ${collected.missing} missing, ${collected.duplicates} repeated line(s) dropped, ` +
        `${collected.unreadable} unreadable line(s)` +
        (collected.beyond > 0 ? `, ${collected.beyond} past the run's size` : "")
    )
    const why = incomplete(collected)
    if (why !== undefined) return yield* Effect.fail(new CliError({ message: why, code: ExitCode.BatchIncomplete }))
  })
