/**
 * The files of a `batch`: the results file opened new, or kept from an earlier run and reopened to
 * go on (`--resume`, its checkpoint checked against this run's input and options), never through a
 * link someone planted.
 */
import * as Console from "effect/Console"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { type FileHandle, unlink } from "node:fs/promises"
import { createInterface } from "node:readline"
import { type Checkpoint, keptLine, mismatch } from "../../core/checkpoint.js"
import {
  createBeside,
  createNew,
  kindAt,
  openToRead,
  othersMayWriteBeside,
  replace,
  writeReplacing
} from "../../core/files.js"
import * as Json from "../../core/json.js"
import { wholeLines } from "../../core/wholeLines.js"
import type * as PersonData from "../PersonData.js"
import { CliError, ExitCode, usage } from "./outcome.js"
import { fromFile, sha256OfFile } from "./persons.js"
import * as Render from "./render.js"

/** What a batch is asked to do (its options already checked). */
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
  /** How long a person waits for a service that looks down (the library's default when undefined). */
  readonly outagePatience?: Duration.Duration | undefined
}

export const io = <A>(
  what: string,
  run: () => Promise<A>,
  code: number = ExitCode.Failure
): Effect.Effect<A, CliError> =>
  Effect.tryPromise({
    try: run,
    catch: (error) =>
      // Stryker disable next-line OptionalChaining: equivalent, Node's file system rejects with Error objects, never null
      new CliError({ message: `${what}: ${(error as NodeJS.ErrnoException)?.code ?? String(error)}`, code })
  })

/** What earlier runs did, from the results file. */
export interface Earlier {
  readonly indices: ReadonlySet<number>
  readonly failed: number
}

const nothingEarlier: Earlier = { indices: new Set(), failed: 0 }

/** The results file's last byte, or `undefined` when it is empty. */
const lastByte = async (handle: FileHandle): Promise<number | undefined> => {
  const { size } = await handle.stat()
  // Stryker disable next-line ConditionalExpression: equivalent, a read at -1 of an empty file reads nothing, and it has no line to keep either way
  if (size === 0) return undefined
  const last = Buffer.alloc(1)
  await handle.read(last, 0, 1, size - 1)
  return last[0]
}

/**
 * Replaces the results file with the lines a resumed batch keeps, read line by line (the file may
 * be larger than memory allows as one string), and returns the new file open for the lines to
 * come. A last line without its newline was cut by a crash and is dropped.
 */
const keepDone = (out: string): Promise<Earlier & Results> =>
  (async () => {
    const reader = await openToRead(out)
    const { handle: writer, path: keptPath } = await createBeside(out).catch(async (error: unknown) => {
      await reader.close()
      throw error
    })
    const kept = wholeLines(writer)
    const indices = new Set<number>()
    let failed = 0
    try {
      // An empty file has no line, kept or dropped.
      const whole = (await lastByte(reader)) === 0x0a
      let pending = ""
      let previous: string | undefined
      const keep = async (line: string) => {
        const done = keptLine(line)
        if (done === undefined || indices.has(done.index)) return
        indices.add(done.index)
        if (done.failed) failed++
        pending += `${line}\n`
        // Stryker disable next-line ConditionalExpression,EqualityOperator,BlockStatement: equivalent in what is written, the bound is on memory only (1 MiB held at most)
        if (pending.length > 1 << 20) {
          await kept.append(pending, "latin1")
          pending = ""
        }
      }
      // Read and written back as latin1: each byte a character, so a kept line is kept byte for byte.
      const lines = createInterface({
        // Stryker disable next-line BooleanLiteral: equivalent, the handle is closed below either way (a second close resolves)
        input: reader.createReadStream({ encoding: "latin1", autoClose: false }),
        crlfDelay: Infinity
      })
      for await (const line of lines) {
        // Stryker disable next-line ConditionalExpression: equivalent, keptLine finds no line in undefined
        if (previous !== undefined) await keep(previous)
        previous = line
      }
      // Stryker disable next-line ConditionalExpression: equivalent, keptLine finds no line in undefined
      if (previous !== undefined && whole) await keep(previous)
      await kept.append(pending, "latin1")
      await replace(keptPath, out)
    } catch (error) {
      await writer.close()
      await unlink(keptPath).catch(() => undefined)
      throw error
    } finally {
      await reader.close()
    }
    return { indices, failed, handle: writer, lines: kept }
  })()

/** A file the batch writes must not be a link (or a FIFO) someone planted: refused before anything is read or written. */
const refuseLink = (path: string) =>
  Effect.flatMap(io(`cannot read ${Render.typed(path)}`, () => kindAt(path), ExitCode.Usage), (kind) =>
    kind === "link"
      ? Effect.fail(usage(`${Render.typed(path)} is a symbolic link: give the path of the file itself`))
      : kind === "other"
      ? Effect.fail(usage(`${Render.typed(path)} is not a regular file`))
      : Effect.succeed(kind))

/** The positions already done, and the results file open to go on; refuses to resume another batch. */
const resumeFrom = (job: Job, checkpointPath: string, wanted: Checkpoint) =>
  Effect.gen(function*() {
    if ((yield* refuseLink(checkpointPath)) === "none") {
      return yield* Effect.fail(
        usage(`--resume: no checkpoint at ${Render.typed(checkpointPath)}; run without --resume to start`)
      )
    }
    const found = yield* io(`cannot read ${Render.typed(checkpointPath)}`, async () => {
      const handle = await openToRead(checkpointPath)
      try {
        // Stryker disable next-line StringLiteral: equivalent, JSON.parse reads a Buffer as UTF-8 text too
        return await handle.readFile("utf8")
      } finally {
        await handle.close()
      }
    }).pipe(Effect.map((text) => Json.parse(text)?.value))
    const refused = mismatch(found, wanted)
    if (refused !== undefined) return yield* Effect.fail(usage(`--resume: ${refused}; use another --out`))
    if ((yield* refuseLink(job.out)) === "none") return { ...nothingEarlier, handle: undefined }
    return yield* io(`cannot read and rewrite ${Render.typed(job.out)}`, () => keepDone(job.out))
  })

/**
 * The results file open, and its lines appended whole: a write to a full disk that lands short is
 * cut back, so that the file only ever holds whole lines (and --resume finds every one it kept).
 */
export interface Results {
  readonly handle: FileHandle
  readonly lines: ReturnType<typeof wholeLines>
}

/** A batch ready to run: how many persons its input holds, what earlier runs did, the results file open. */
export interface Opened {
  readonly total: number
  readonly earlier: Earlier
  readonly out: Results
  /** The results file's path as messages show it: what the user typed may hold a secret's shape. */
  readonly shownOut: string
}

/**
 * Checks the input and the files, writes a new batch's checkpoint (or checks a resumed one's) and
 * opens the results file (closed with the scope).
 */
export const open = (job: Job): Effect.Effect<Opened, CliError, Scope.Scope> =>
  Effect.gen(function*() {
    const checkpointPath = `${job.out}.checkpoint.json`
    const shownOut = Render.typed(job.out)
    const total = yield* Stream.runCount(fromFile(job.personsFile))
    if (total === 0) return yield* Effect.fail(usage(`${Render.typed(job.personsFile)} holds no PersonUid`))
    const wanted: Checkpoint = {
      version: 1,
      operation: job.operation.name,
      inputSha256: yield* sha256OfFile(job.personsFile),
      startDate: job.startDate ?? null,
      endDate: job.endDate ?? null
    }
    if (!job.resume) {
      const kind = yield* refuseLink(job.out)
      if (kind !== "none") {
        return yield* Effect.fail(
          usage(`${shownOut} exists: pass --resume to continue that batch, or choose another --out`)
        )
      }
    }
    if (yield* Effect.promise(() => othersMayWriteBeside(job.out))) {
      yield* Console.error(
        `warning: other users may create files in the directory of ${shownOut}; the results are written ` +
          `owner-only and never through a link, but a directory of your own is safer`
      )
    }
    const resumed = job.resume ? yield* resumeFrom(job, checkpointPath, wanted) : undefined
    // A resumed batch's checkpoint was just read and matches: only a new batch writes one.
    if (!job.resume) {
      yield* io(
        `cannot write ${Render.typed(checkpointPath)}`,
        () => writeReplacing(checkpointPath, JSON.stringify(wanted) + "\n"),
        ExitCode.Usage
      )
    }
    const out = yield* Effect.acquireRelease(
      resumed?.handle === undefined
        ? io(`cannot create ${shownOut}`, async () => {
          const handle = await createNew(job.out)
          return { handle, lines: wholeLines(handle) }
        }, ExitCode.Usage)
        : Effect.succeed({ handle: resumed.handle, lines: resumed.lines }),
      ({ handle }) => Effect.promise(() => handle.close())
    )
    return { total, earlier: resumed ?? nothingEarlier, out, shownOut }
  })
