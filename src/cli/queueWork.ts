/**
 * `effect-clinical queue work`: workers over the queue, each record a line of this process's shard,
 * progress told as it goes, until stopped (or, with `--until-empty`, until nothing is left).
 */
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { ClinicalQueue } from "../bullmq.js"
import * as ClinicalClient from "../ClinicalClient.js"
import type * as PersonData from "../PersonData.js"
import * as TokenStore from "../TokenStore.js"
import { configProvider } from "./environment.js"
import type { Gauges } from "./observed.js"
import { CliError, ExitCode, usage } from "./outcome.js"
import { gaugesFrom, isDrained, progressBar, progressLine } from "./queueProgress.js"
import {
  type Common,
  connection,
  hideSecrets,
  type QueueEnvironment,
  queueEnvironment,
  queueOptions,
  say,
  shownUrl,
  tokenStoreKey,
  told,
  warner
} from "./queueRedis.js"
import * as Render from "./render.js"
import { openShard, shardDirectory, shardLine } from "./resultShards.js"

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
