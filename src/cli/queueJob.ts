/**
 * `effect-clinical queue ...`: bulk reads over BullMQ, from a terminal or one container per
 * worker. Loaded when a queue command runs, with BullMQ and ioredis (optional peers the
 * application installs: queue.ts names them when they are absent).
 *
 * Settings: the client's `CLINICAL_*`, `CLINICAL_REDIS_URL` (shown as scheme, host, port and db,
 * never a password) and `CLINICAL_SEALING_KEY` (seals the PersonUids in the jobs, and the token the
 * workers share).
 */
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { createReadStream } from "node:fs"
import { unlink } from "node:fs/promises"
import { timeLeftMillis } from "../../core/pace.js"
import { ClinicalQueue } from "../bullmq.js"
import type * as PersonData from "../PersonData.js"
import type { Gauges } from "./observed.js"
import { CliError, ExitCode, usage } from "./outcome.js"
import { boundedLines, MAX_LINE_BYTES, personOfLine, sha256OfFile } from "./persons.js"
import { fleetPace, gaugesFrom, leftIn, unansweredText } from "./queueProgress.js"
import { type Common, ONE_OFF_ANSWER_MILLIS, queueOptions, say, warner, withQueue } from "./queueRedis.js"
import * as Render from "./render.js"
import { collect as collectShards, type Collected } from "./resultShards.js"

export { type Work, work } from "./queueWork.js"

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
