/**
 * `effect-clinical batch`: one operation for every person of a file, results to an NDJSON file
 * (readable by the owner only), progress on stderr, resumable after Ctrl-C or a crash.
 */
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { constants } from "node:fs"
import { type FileHandle, open, readFile, stat, truncate, writeFile } from "node:fs/promises"
import type { ClinicalError } from "../ClinicalError.js"
import * as PersonData from "../PersonData.js"
import type { Checkpoint, Done } from "./checkpoint.js"
import { doneOf, mismatch, resultLine } from "./checkpoint.js"
import { CliError, ExitCode, usage } from "./outcome.js"
import { fromFile, sha256OfFile } from "./persons.js"
import * as Render from "./render.js"

/** What a batch is asked to do. */
export interface Job {
  readonly operation: PersonData.Operation
  readonly personsFile: string
  readonly out: string
  readonly resume: boolean
  readonly concurrency: number | undefined
  readonly startDate: string | undefined
  readonly endDate: string | undefined
  /** Whether stderr is a terminal: a progress bar, else a plain line now and then. */
  readonly interactive: boolean
  /** How often progress is shown. */
  readonly progressEvery: Duration.Duration
}

const OWNER_ONLY = 0o600

const nothingDone: Done = { indices: new Set(), failed: 0, completeBytes: 0 }

const io = <A>(what: string, run: () => Promise<A>): Effect.Effect<A, CliError> =>
  Effect.tryPromise({
    try: run,
    catch: (error) =>
      new CliError({
        message: `${what}: ${(error as NodeJS.ErrnoException)?.code ?? String(error)}`,
        code: ExitCode.Failure
      })
  })

const exists = (path: string) => Effect.promise(() => stat(path).then(() => true, () => false))

/** The positions already done, from the results file; a line cut by a crash is removed. */
const resumeFrom = (job: Job, checkpointPath: string, wanted: Checkpoint) =>
  Effect.gen(function*() {
    if (!(yield* exists(checkpointPath))) {
      return yield* Effect.fail(usage(`--resume: no checkpoint at ${checkpointPath}; run without --resume to start`))
    }
    const found = yield* io(`cannot read ${checkpointPath}`, () => readFile(checkpointPath, "utf8")).pipe(
      Effect.map((text) => {
        try {
          return JSON.parse(text) as unknown
        } catch {
          return undefined
        }
      })
    )
    const refused = mismatch(found, wanted)
    if (refused !== undefined) return yield* Effect.fail(usage(`--resume: ${refused}; use another --out`))
    if (!(yield* exists(job.out))) return nothingDone
    const done = doneOf(yield* io(`cannot read ${job.out}`, () => readFile(job.out, "latin1")))
    yield* io(`cannot repair ${job.out}`, () => truncate(job.out, done.completeBytes))
    return done
  })

const lineOf = (
  index: number,
  outcome: PersonData.Outcome<PersonData.Result<PersonData.Item>>
): string | undefined => {
  switch (outcome._tag) {
    case "Success":
      return resultLine(index, { outcome: "Success", items: outcome.result.items })
    case "Failure":
      return resultLine(index, { outcome: "Failure", error: Render.errorJson(outcome.error) })
    case "Skipped":
      // Not written: the results file records what is done, and a skipped person is not.
      return undefined
  }
}

/** `ServerError`, `ApiError PersonNotFound`: how failures are grouped in the summary. */
const failureKind = (error: ClinicalError): string =>
  error._tag === "ApiError" && error.errorType !== null ? `${error._tag} ${error.errorType}` : error._tag

const STOP_WORDS: Record<PersonData.StopReason, string> = {
  CredentialsRefused: "the credentials were refused",
  InvalidRequest: "the request was refused before sending",
  TransportFailures: "too many transport failures in a row"
}

const progressLine = (progress: PersonData.Progress, total: number): string =>
  `${progress.done}/${total} done: ${progress.succeeded} succeeded, ${progress.failed} failed, ` +
  `${progress.skipped} skipped (${progress.perSecond.toFixed(1)}/s)`

const bar = (progress: PersonData.Progress, total: number): string => {
  const width = 24
  const filled = total === 0 ? width : Math.round((progress.done / total) * width)
  return `\r[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${progressLine(progress, total)}\x1b[K`
}

/** Runs the batch; fails with a `CliError` carrying exit code 3 or 4 when not every person succeeded. */
export const run = (job: Job): Effect.Effect<void, CliError, PersonData.PersonData> =>
  Effect.gen(function*() {
    const operation = job.operation.name
    const checkpointPath = `${job.out}.checkpoint.json`
    const wanted: Checkpoint = {
      version: 1,
      operation,
      inputSha256: yield* sha256OfFile(job.personsFile),
      startDate: job.startDate ?? null,
      endDate: job.endDate ?? null
    }
    let earlier = nothingDone
    if (job.resume) earlier = yield* resumeFrom(job, checkpointPath, wanted)
    else if (yield* exists(job.out)) {
      return yield* Effect.fail(
        usage(`${job.out} exists: pass --resume to continue that batch, or choose another --out`)
      )
    }
    yield* io(
      `cannot write ${checkpointPath}`,
      () => writeFile(checkpointPath, JSON.stringify(wanted) + "\n", { mode: OWNER_ONLY })
    )
    const total = yield* Stream.runCount(fromFile(job.personsFile))

    const out = yield* Effect.acquireRelease(
      io(`cannot open ${job.out}`, async (): Promise<FileHandle> => {
        const handle = await open(job.out, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, OWNER_ONLY)
        await handle.chmod(OWNER_ONLY)
        return handle
      }),
      (handle) => Effect.promise(() => handle.close())
    )

    // Positions in the input of the persons handed to getMany, by getMany's own count; bounded
    // by its read-ahead, as each is removed when its entry comes back.
    const positions = new Map<number, number>()
    let handed = 0
    const persons = fromFile(job.personsFile).pipe(
      Stream.zipWithIndex,
      Stream.filter(([, index]) => !earlier.indices.has(index)),
      Stream.map(([personUid, index]) => {
        positions.set(handed++, index)
        return personUid
      })
    )

    const startedAt = yield* Clock.currentTimeMillis
    const latest = yield* Ref.make<PersonData.Progress>({
      done: 0,
      succeeded: 0,
      failed: 0,
      skipped: 0,
      elapsedMillis: 0,
      perSecond: 0,
      stopped: undefined
    })
    const failures = new Map<string, number>()
    let stop: { readonly reason: PersonData.StopReason; readonly error: ClinicalError } | undefined
    const already = earlier.indices.size
    const shown = (progress: PersonData.Progress) => ({ ...progress, done: progress.done + already })

    const report = Effect.flatMap(Ref.get(latest), (progress) =>
      job.interactive
        ? Effect.sync(() => process.stderr.write(bar(shown(progress), total)))
        : Console.error(progressLine(shown(progress), total)))
    const reporter = yield* report.pipe(
      Effect.repeat(Schedule.spaced(job.progressEvery)),
      Effect.delay(job.progressEvery),
      Effect.forkScoped
    )

    yield* PersonData.getMany(job.operation, persons, {
      concurrency: job.concurrency,
      startDate: job.startDate,
      endDate: job.endDate,
      onProgress: (progress) => Ref.set(latest, progress)
    }).pipe(
      Stream.mapError((error) => usage(error.message)),
      Stream.filterMap(({ index, outcome }) => {
        const position = positions.get(index)!
        positions.delete(index)
        if (outcome._tag === "Failure") {
          const kind = failureKind(outcome.error)
          failures.set(kind, (failures.get(kind) ?? 0) + 1)
        }
        if (outcome._tag === "Skipped") stop = outcome.stop
        return Option.fromNullable(lineOf(position, outcome))
      }),
      Stream.groupedWithin(256, Duration.millis(200)),
      Stream.runForEach((lines) => io(`cannot write ${job.out}`, () => out.write(Chunk.join(lines, "")))),
      Effect.onInterrupt(() =>
        Effect.flatMap(Ref.get(latest), (progress) =>
          Console.error(
            `\ninterrupted after ${progress.succeeded + progress.failed + already} of ${total} persons; ` +
              `run the same command with --resume to continue`
          ))
      )
    )
    yield* Fiber.interrupt(reporter)

    const progress = yield* Ref.get(latest)
    const elapsed = (yield* Clock.currentTimeMillis) - startedAt
    if (job.interactive) process.stderr.write(`${bar(shown(progress), total)}\n`)
    const failed = earlier.failed + progress.failed
    const succeeded = already - earlier.failed + progress.succeeded
    const summary = [
      `batch ${operation}: ${total} persons: ${succeeded} succeeded, ${failed} failed, ${progress.skipped} skipped` +
      (already === 0 ? "" : ` (${already} done in earlier runs)`),
      `this run: ${progress.succeeded + progress.failed} sent in ${Render.duration(elapsed)} ` +
      `(${progress.perSecond.toFixed(1)}/s)`,
      ...(failures.size === 0 ? [] : [
        `failures this run: ${[...failures].map(([kind, count]) => `${count} ${kind}`).join(", ")}` +
        ` (each with its error in ${job.out})`
      ]),
      ...(stop === undefined ? [] : [
        `stopped early: ${STOP_WORDS[stop.reason]}: ${stop.error.message}`,
        `${progress.skipped} persons were not sent; fix the cause and run the same command with --resume`
      ]),
      `results: ${job.out}`
    ]
    yield* Console.error(summary.join("\n"))
    if (stop?.reason === "CredentialsRefused") {
      return yield* Effect.fail(
        new CliError({
          message: "batch stopped: the credentials were refused",
          code: ExitCode.CredentialsRefused,
          reported: true
        })
      )
    }
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
