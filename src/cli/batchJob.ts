/**
 * `effect-clinical batch`: one operation for every person of a file, results to an NDJSON file
 * (readable by the owner only), progress on stderr, resumable after Ctrl-C or a crash.
 *
 * The results file is the record of what is done. A resumed batch keeps the lines of persons with
 * an answer for good (a success, or the service's refusal of that person) and sends the others
 * again: those that failed for a cause that may go away (the network, a 5xx, refused credentials)
 * and those never sent.
 */
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { initial, progressOf, stopReasonOf } from "../../core/batchTally.js"
import { isFinal, resultLine } from "../../core/checkpoint.js"
import * as Metrics from "../../core/observability/metrics.js"
import { timeLeftMillis } from "../../core/pace.js"
import type { ClinicalError } from "../ClinicalError.js"
import { counter, gauge } from "../internal/observability/telemetry.js"
import * as PersonData from "../PersonData.js"
import { type Earlier, io, type Job, open, type Opened } from "./batchFiles.js"
import { CliError, ExitCode, usage } from "./outcome.js"
import { fromFile } from "./persons.js"
import * as Render from "./render.js"

export type { Job } from "./batchFiles.js"

const results = counter(Metrics.batchResults)
const persons = gauge(Metrics.batchPersons)

/** The batch's counts of results written, by outcome, for `operation`. */
const counted = (operation: string, outcome: "success" | "failure", n: number) =>
  n === 0 ? Effect.void : Metric.incrementBy(
    Metric.tagged(Metric.tagged(results, "operation", operation), "outcome", outcome),
    n
  )

/** Longest failure kind shown: an `ErrorType` is the server's text. */
export const MAX_KIND = 60

/**
 * `ServerError`, `ApiError PersonNotFound`: how failures are grouped in the summary, made
 * printable (the `ErrorType` is the server's) and cut.
 */
export const failureKind = (error: ClinicalError): string => {
  const kind = Render.printable(
    error._tag === "ApiError" && error.errorType !== null ? `${error._tag} ${error.errorType}` : error._tag
  )
  return kind.length > MAX_KIND ? `${kind.slice(0, MAX_KIND - 1)}…` : kind
}

/** Most kinds of failure counted apart: a server that invents an `ErrorType` per person must not grow the summary. */
export const MAX_KINDS = 10

/** Failures counted by kind, at most {@link MAX_KINDS} kinds; the rest together. */
export class FailureCounts {
  private readonly byKind = new Map<string, number>()
  private others = 0

  add(kind: string): void {
    const counted = this.byKind.get(kind)
    if (counted !== undefined) this.byKind.set(kind, counted + 1)
    else if (this.byKind.size < MAX_KINDS) this.byKind.set(kind, 1)
    else this.others++
  }

  /** `3 ServerError, 1 ApiError PersonNotFound, 7 of other kinds`, or `undefined` when none failed. */
  describe(): string | undefined {
    const parts = [...this.byKind].map(([kind, count]) => `${count} ${kind}`)
    if (this.others > 0) parts.push(`${this.others} of other kinds`)
    return parts.length === 0 ? undefined : parts.join(", ")
  }
}

const STOP_WORDS: Record<PersonData.StopReason, string> = {
  CredentialsRefused: "the credentials were refused",
  InvalidRequest: "the request was refused before sending",
  TransportFailures: "too many transport failures in a row",
  ServiceDown: "the service stayed down longer than --outage-patience"
}

/** A progress line: the counts, the rate, the time so far and, at that rate, the time left. */
const progressLine = (progress: PersonData.Progress, total: number): string => {
  const left = timeLeftMillis(total - progress.done, progress.perSecond)
  return `${progress.done}/${total} done: ${progress.succeeded} succeeded, ${progress.failed} failed, ` +
    `${progress.skipped} skipped (${progress.perSecond.toFixed(1)}/s, ${
      Render.duration(progress.elapsedMillis)
    } elapsed` +
    `${left === undefined ? "" : `, about ${Render.duration(left)} left`})`
}

// total is at least 1: an input without a PersonUid is refused before the batch starts.
const bar = (progress: PersonData.Progress, total: number): string =>
  Render.bar(progress.done / total, progressLine(progress, total), process.stderr.columns)

/** Runs the batch; fails with a `CliError` carrying exit code 3 or 4 when not every person succeeded. */
export const run = (job: Job): Effect.Effect<void, CliError, PersonData.PersonData> =>
  Effect.gen(function*() {
    const opened = yield* open(job)
    const startedAt = yield* Clock.currentTimeMillis
    const tally = new RunTally(opened.earlier)
    const gauge = (state: string) =>
      Metric.tagged(Metric.tagged(persons, "operation", job.operation.name), "state", state)
    yield* Metric.set(gauge("input"), opened.total)
    yield* Metric.set(gauge("earlier"), tally.already)
    const latest = yield* Ref.make<PersonData.Progress>(progressOf(initial, 0))
    const report = Effect.flatMap(Ref.get(latest), (progress) =>
      job.interactive
        ? Effect.sync(() => process.stderr.write(bar(tally.shown(progress), opened.total)))
        : Console.error(progressLine(tally.shown(progress), opened.total)))
    const reporter = yield* report.pipe(
      Effect.repeat(Schedule.spaced(job.progressEvery)),
      Effect.delay(job.progressEvery),
      Effect.forkScoped
    )
    yield* writeResults(job, opened, tally, (progress) => Ref.set(latest, progress))
    yield* Fiber.interrupt(reporter)

    const progress = yield* Ref.get(latest)
    const elapsed = (yield* Clock.currentTimeMillis) - startedAt
    if (job.interactive) process.stderr.write(`${bar(tally.shown(progress), opened.total)}\n`)
    yield* Console.error(summary(job, opened, tally, progress, elapsed).join("\n"))
    const failed = tally.shown(progress).failed
    if (tally.stop?.reason === "CredentialsRefused") {
      return yield* Effect.fail(
        new CliError({
          message: "batch stopped: the credentials were refused",
          code: ExitCode.CredentialsRefused,
          reported: true
        })
      )
    }
    // Stryker disable next-line ConditionalExpression: equivalent, a person is skipped only after a failure that stopped the batch, which is counted in failed
    if (failed > 0 || progress.skipped > 0) {
      return yield* Effect.fail(
        new CliError({
          message: `batch finished with ${failed} failed and ${progress.skipped} skipped`,
          code: ExitCode.BatchIncomplete,
          reported: true
        })
      )
    }
  }).pipe(Effect.scoped)

/** What this run has seen: the results lines it made, the failures by kind, why it stopped. */
class RunTally {
  // The input position of each person handed to getMany, by getMany's own count; bounded by its
  // read-ahead, as each is removed when its entry comes back.
  private readonly handedOver = new Map<number, number>()
  private handed = 0
  readonly failures = new FailureCounts()
  stop: { readonly reason: PersonData.StopReason; readonly error: ClinicalError } | undefined = undefined
  /** Persons to send again with --resume: failed for a cause that may go away, or skipped. */
  retryLater = 0
  /** Results lines written by this run. */
  written = 0

  constructor(readonly earlier: Earlier) {}

  /** Persons done in earlier runs. */
  get already(): number {
    return this.earlier.indices.size
  }

  /** Records that the person at input position `index` is the next handed to getMany. */
  handOver(index: number): void {
    this.handedOver.set(this.handed++, index)
  }

  /** Totals over every run, as the summary gives them (a resumed batch's progress counted this run's only). */
  shown(progress: PersonData.Progress): PersonData.Progress {
    return {
      ...progress,
      done: progress.done + this.already,
      succeeded: progress.succeeded + this.already - this.earlier.failed,
      failed: progress.failed + this.earlier.failed
    }
  }

  /** The results line of an entry; a skipped person has none (it is not done). */
  lineOf({ index, outcome }: PersonData.Entry<PersonData.Result<PersonData.Item>>): string {
    const position = this.handedOver.get(index)!
    this.handedOver.delete(index)
    switch (outcome._tag) {
      case "Success":
        return resultLine(position, { outcome: "Success", items: outcome.result.items })
      case "Failure": {
        const error = outcome.error
        this.failures.add(failureKind(error))
        if (stopReasonOf(error, 0, Number.MAX_SAFE_INTEGER) === "CredentialsRefused") {
          this.stop ??= { reason: "CredentialsRefused", error }
        }
        if (!isFinal(error)) this.retryLater++
        return resultLine(position, { outcome: "Failure", error: Render.errorJson(error) })
      }
      case "Skipped":
        this.stop ??= outcome.stop
        this.retryLater++
        return ""
    }
  }
}

/** Runs the operation for every person not done yet, each chunk of answers written as it completes. */
const writeResults = (
  job: Job,
  { earlier, out, shownOut, total }: Opened,
  tally: RunTally,
  onProgress: (progress: PersonData.Progress) => Effect.Effect<void>
): Effect.Effect<void, CliError, PersonData.PersonData> => {
  const persons = fromFile(job.personsFile).pipe(
    Stream.zipWithIndex,
    Stream.filter(([, index]) => !earlier.indices.has(index)),
    Stream.map(([personUid, index]) => {
      tally.handOver(index)
      return personUid
    })
  )
  return PersonData.getMany(job.operation, persons, {
    concurrency: job.concurrency,
    outagePatience: job.outagePatience,
    startDate: job.startDate,
    endDate: job.endDate,
    // The results file must not hold what the server echoed of the request.
    redactEchoedSecrets: true,
    onProgress
  }).pipe(
    Stream.mapError((error) => usage(error.message)),
    // Each chunk is what has completed since the last write: written at once, nothing held back.
    Stream.runForEachChunk((entries) => {
      // Stryker disable next-line MethodExpression,ConditionalExpression,StringLiteral: equivalent in what is written (an empty line joins as nothing); the count it feeds shows only if a batch stopped early is interrupted between its last two writes
      const answered = Chunk.toReadonlyArray(entries)
      const lines = answered.map((entry) => tally.lineOf(entry)).filter((line) => line !== "")
      const failures = answered.filter((entry) => entry.outcome._tag === "Failure").length
      // Stryker disable next-line ConditionalExpression: equivalent, writing no line writes nothing
      return lines.length === 0
        ? Effect.void
        // Whole or not at all: interrupted mid-write, the lines still land, and are counted.
        : Effect.uninterruptible(
          Effect.map(io(`cannot write ${shownOut}`, () => out.lines.append(lines.join(""))), () => {
            tally.written += lines.length
          }).pipe(
            // Counted once written, as the results file holds them.
            Effect.zipLeft(counted(job.operation.name, "success", lines.length - failures)),
            Effect.zipLeft(counted(job.operation.name, "failure", failures))
          )
        )
    }),
    Effect.onInterrupt(() =>
      Console.error(
        `\ninterrupted: ${tally.already + tally.written} of ${total} persons are in ${shownOut}; ` +
          `run the same command with --resume to continue`
      )
    )
  )
}

/** The summary printed when the batch ends: totals over every run, this run's rate, failures, what to do next. */
const summary = (
  job: Job,
  { shownOut, total }: Opened,
  tally: RunTally,
  progress: PersonData.Progress,
  elapsedMillis: number
): ReadonlyArray<string> => {
  const { failed, succeeded } = tally.shown(progress)
  const kinds = tally.failures.describe()
  const already = tally.already
  return [
    `batch ${job.operation.name}: ${Render.count(total, "person")}: ${succeeded} succeeded, ${failed} failed, ` +
    `${progress.skipped} skipped` + (already === 0 ? "" : ` (${already} done in earlier runs)`),
    `this run: ${progress.succeeded + progress.failed} answered in ${Render.duration(elapsedMillis)} ` +
    `(${progress.perSecond.toFixed(1)}/s)`,
    ...(kinds === undefined ? [] : [`failures this run: ${kinds} (each with its error in ${shownOut})`]),
    ...(tally.stop === undefined
      ? []
      : [`stopped early: ${STOP_WORDS[tally.stop.reason]}: ${Render.printable(tally.stop.error.message)}`]),
    ...(tally.retryLater === 0 ? [] : [
      `${Render.count(tally.retryLater, "person")} failed for a cause that may go away or were not sent: ` +
      `fix the cause and run the same command with --resume to send them again`
    ]),
    `results: ${shownOut}`
  ]
}
