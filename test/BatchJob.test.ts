/**
 * `effect-clinical batch`'s job, run in this process (`cli/batchJob.run`) over the in-memory mock:
 * what it writes to the results file, what it says on stderr, which exit code its failure carries,
 * and how a resumed run counts. The command line's own tests (test/Cli.test.ts) run the built
 * executable; these run the source, so that mutation testing reaches the batch's decisions.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Console, Duration, Effect, Either, Fiber, Layer } from "effect"
import { ClinicalClient, ClinicalError, PersonData } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { vi } from "vitest"
import * as Files from "../core/files.js"
import * as BatchJob from "../src/cli/batchJob.js"
import { ExitCode } from "../src/cli/outcome.js"

// The file operations as they are, unless a test makes one fail (the file system refusing it).
vi.mock("../core/files.js", async (original) => {
  const actual = await original<typeof import("../core/files.js")>()
  return {
    ...actual,
    createBeside: vi.fn(actual.createBeside),
    createNew: vi.fn(actual.createNew),
    kindAt: vi.fn(actual.kindAt),
    openToRead: vi.fn(actual.openToRead),
    replace: vi.fn(actual.replace),
    writeReplacing: vi.fn(actual.writeReplacing)
  }
})

/** A file operation of `files.js`: its first argument is the path. */
type FileOperation = (path: string, ...rest: Array<never>) => Promise<unknown>

/** Makes `operation` reject with an `EIO` for `path` until the returned function is called. */
const failingFor = (operation: FileOperation, path: string) => {
  const mocked = vi.mocked(operation as (path: string, ...rest: Array<unknown>) => Promise<unknown>)
  const actual = mocked.getMockImplementation()!
  mocked.mockImplementation((target, ...rest) =>
    target === path
      ? Promise.reject(Object.assign(new Error(`i/o error at ${target}`), { code: "EIO" }))
      : actual(target, ...rest)
  )
  return () => void mocked.mockImplementation(actual)
}

/** What `run` writes to process.stderr (the progress bar's way out), and its outcome. */
const stderrDuring = <A, E, R>(run: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const written: Array<string> = []
    const write = process.stderr.write
    process.stderr.write = ((chunk: string) => {
      written.push(String(chunk))
      return true
    }) as typeof process.stderr.write
    const outcome = yield* Effect.ensuring(run, Effect.sync(() => void (process.stderr.write = write)))
    return { written, outcome }
  })

/** The file descriptors this process has open (Linux). */
const openDescriptors = () => Fs.readdirSync("/proc/self/fd").length

const UIDS = MockClinicalServer.fixturePersons.map((person) => person.personUid)

/** A client over a fresh in-memory mock (no retries: each fault is one outcome), the mock in context. */
const client = (applicationId: string = MockClinicalServer.demoApplicationId) =>
  ClinicalClient.layer({ baseUrl: "http://127.0.0.1:9", applicationId, maxRetries: 0 }).pipe(
    Layer.provideMerge(MockClinicalServer.layerTransport())
  )

/** A console whose `error` lines (what the job says on stderr) are kept in `lines`. */
const capturing = Effect.map(Effect.console, (current) => {
  const lines: Array<string> = []
  const console: Console.Console = {
    ...current,
    error: (...args: ReadonlyArray<unknown>) => Effect.sync(() => void lines.push(args.map(String).join(" ")))
  }
  return { lines, console }
})

// Each test's own directory, all removed after the file: a mutation run makes thousands.
const directories: Array<string> = []
const directory = () => {
  const made = Fs.mkdtempSync(Path.join(Os.tmpdir(), "batch-job-"))
  directories.push(made)
  return made
}
afterAll(() => {
  for (const made of directories) Fs.rmSync(made, { recursive: true, force: true })
})

const jobOf = (dir: string, persons: ReadonlyArray<string>, extra: Partial<BatchJob.Job> = {}): BatchJob.Job => {
  const personsFile = Path.join(dir, "persons.txt")
  if (!Fs.existsSync(personsFile)) Fs.writeFileSync(personsFile, ["# persons", ...persons].join("\n") + "\n")
  return {
    operation: PersonData.medications,
    personsFile,
    out: Path.join(dir, "out.ndjson"),
    resume: false,
    concurrency: 2,
    startDate: undefined,
    endDate: undefined,
    interactive: false,
    progressEvery: Duration.hours(1),
    ...extra
  }
}

/** Runs the job with its stderr captured: the CliError it failed with (or undefined), and the lines. */
const runJob = (job: BatchJob.Job, applicationId?: string) =>
  Effect.gen(function*() {
    const { console, lines } = yield* capturing
    const outcome = yield* BatchJob.run(job).pipe(
      Effect.provide(client(applicationId)),
      Effect.withConsole(console),
      Effect.either
    )
    return { error: Either.isLeft(outcome) ? outcome.left : undefined, lines }
  })

const results = (path: string) =>
  Fs.readFileSync(path, "utf8").split("\n").filter((line) => line !== "").map((line) =>
    JSON.parse(line) as { index: number; outcome: string; items?: unknown; error?: { _tag: string } }
  )

describe("batchJob.run, in process", () => {
  it.live("every person answered: one line each by input position, owner-only files, the summary, no failure", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, UIDS)
      const { error, lines } = yield* runJob(job)
      expect(error).toBeUndefined()
      const written = results(job.out)
      expect(written.map((line) => line.index).sort()).toEqual([0, 1, 2])
      for (const line of written) {
        expect(line).toEqual({
          index: line.index,
          outcome: "Success",
          items: MockClinicalServer.fixturePersons[line.index]!.medications
        })
      }
      expect(Fs.statSync(job.out).mode & 0o777).toBe(0o600)
      const checkpoint = JSON.parse(Fs.readFileSync(`${job.out}.checkpoint.json`, "utf8"))
      expect(checkpoint).toMatchObject({ version: 1, operation: "medications", startDate: null, endDate: null })
      expect(checkpoint.inputSha256).toMatch(/^[0-9a-f]{64}$/)
      expect(Fs.readFileSync(`${job.out}.checkpoint.json`, "utf8")).toBe(`${JSON.stringify(checkpoint)}\n`)
      expect(lines).toHaveLength(1)
      const summary = lines[0]!.split("\n")
      expect(summary[0]).toBe("batch medications: 3 persons: 3 succeeded, 0 failed, 0 skipped")
      // The time this run took, in ms or s: a few of them, not the clock's reading.
      expect(summary[1]).toMatch(/^this run: 3 answered in \d+(\.\d)? m?s \(\d+\.\d\/s\)$/)
      expect(summary.slice(2)).toEqual([`results: ${job.out}`])
      // Nothing of a PersonUid in any file written.
      for (const uid of UIDS) {
        expect(Fs.readFileSync(job.out, "utf8")).not.toContain(uid)
        expect(Fs.readFileSync(`${job.out}.checkpoint.json`, "utf8")).not.toContain(uid)
      }
    }))

  it.live("an unknown person and a server error: exit 3, each failure by kind, the retryable one to send again", () =>
    Effect.gen(function*() {
      const dir = directory()
      // The dates go into the checkpoint, and to the server.
      const job = jobOf(dir, [UIDS[0]!, "no-such-person", UIDS[1]!], {
        concurrency: 1,
        startDate: "2024-01-01",
        endDate: "2024-12-31"
      })
      const { console, lines } = yield* capturing
      const outcome = yield* Effect.gen(function*() {
        const server = yield* MockClinicalServer.MockClinicalServer
        // The third person's request is answered 500.
        yield* server.injectFaults("medications", [
          MockClinicalServer.Fault.delay(0),
          MockClinicalServer.Fault.delay(0),
          MockClinicalServer.Fault.status(500)
        ])
        return yield* Effect.either(BatchJob.run(job))
      }).pipe(Effect.provide(client()), Effect.withConsole(console))
      const error = Either.isLeft(outcome) ? outcome.left : undefined
      expect(error).toMatchObject({ _tag: "CliError", code: ExitCode.BatchIncomplete, reported: true })
      expect(error?.message).toBe("batch finished with 2 failed and 0 skipped")
      const written = results(job.out).sort((a, b) => a.index - b.index)
      expect(written.map((line) => [line.index, line.outcome, line.error?._tag])).toEqual([
        [0, "Success", undefined],
        [1, "Failure", "ApiError"],
        [2, "Failure", "ServerError"]
      ])
      expect(JSON.parse(Fs.readFileSync(`${job.out}.checkpoint.json`, "utf8"))).toMatchObject({
        startDate: "2024-01-01",
        endDate: "2024-12-31"
      })
      const summary = lines.join("\n").split("\n")
      expect(summary[0]).toBe("batch medications: 3 persons: 1 succeeded, 2 failed, 0 skipped")
      expect(summary[1]).toMatch(/^this run: 3 answered in /)
      expect(summary).toContain(
        `failures this run: 1 ApiError PersonNotFound, 1 ServerError (each with its error in ${job.out})`
      )
      // The 500 may go away; the unknown person will not.
      expect(summary).toContain(
        "1 person failed for a cause that may go away or were not sent: " +
          "fix the cause and run the same command with --resume to send them again"
      )
      expect(summary.at(-1)).toBe(`results: ${job.out}`)
    }))

  it.live("resumed: the persons done before are counted, not sent; the one that may succeed now is sent again", () =>
    Effect.gen(function*() {
      const dir = directory()
      const first = jobOf(dir, [...UIDS, "no-such-person"])
      const { console } = yield* capturing
      yield* Effect.gen(function*() {
        const server = yield* MockClinicalServer.MockClinicalServer
        yield* server.injectFaults("medications", [MockClinicalServer.Fault.status(503)])
        return yield* Effect.either(BatchJob.run({ ...first, concurrency: 1 }))
      }).pipe(Effect.provide(client()), Effect.withConsole(console))
      expect(results(first.out).filter((line) => line.error?._tag === "ServerError")).toHaveLength(1)

      const again = yield* runJob({ ...first, resume: true })
      // The unknown person stays failed: exit 3 again, its line kept, the 503 one answered now.
      expect(again.error).toMatchObject({ code: ExitCode.BatchIncomplete })
      const summary = again.lines.join("\n").split("\n")
      expect(summary[0]).toBe("batch medications: 4 persons: 3 succeeded, 1 failed, 0 skipped (3 done in earlier runs)")
      expect(summary[1]).toMatch(/^this run: 1 answered in /)
      expect(summary.some((line) => line.startsWith("failures this run"))).toBe(false)
      const written = results(first.out)
      expect(written.map((line) => line.index).sort()).toEqual([0, 1, 2, 3])
      expect(written.filter((line) => line.outcome === "Failure").map((line) => line.error?._tag)).toEqual(["ApiError"])
    }))

  it.live("a refused ApplicationId stops the batch early: exit 4, why, and every person left to send again", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, [...UIDS, ...UIDS])
      const { error, lines } = yield* runJob(job, "0f8fad5b-d9cb-469f-a165-70867728950e")
      expect(error).toMatchObject({
        code: ExitCode.CredentialsRefused,
        message: "batch stopped: the credentials were refused",
        reported: true
      })
      // Only whole lines of ours: a skipped person has none.
      for (const line of results(job.out)) {
        expect(line).toMatchObject({ outcome: "Failure", error: { _tag: "Unauthorized" } })
      }
      const summary = lines.join("\n")
      expect(summary).toContain("stopped early: the credentials were refused: ")
      expect(summary).toMatch(/(\d+) persons? failed for a cause that may go away or were not sent/)
      const retry = Number(/(\d+) persons? failed for a cause/.exec(summary)![1])
      const [, failed, skipped] = /: 0 succeeded, (\d+) failed, (\d+) skipped/.exec(summary)!.map(Number)
      expect(retry).toBe(failed! + skipped!)
      expect(retry).toBe(6)
      expect(summary).not.toContain("0f8fad5b")
    }))

  it.live("refused before anything is sent: an empty input, a results file that exists, a resume with nothing to resume", () =>
    Effect.gen(function*() {
      const dir = directory()
      const empty = jobOf(dir, [])
      expect((yield* runJob(empty)).error).toMatchObject({
        code: ExitCode.Usage,
        message: `${empty.personsFile} holds no PersonUid`
      })
      const other = directory()
      const job = jobOf(other, UIDS)
      expect((yield* runJob({ ...job, resume: true })).error).toMatchObject({
        code: ExitCode.Usage,
        message: `--resume: no checkpoint at ${job.out}.checkpoint.json; run without --resume to start`
      })
      Fs.writeFileSync(job.out, "")
      expect((yield* runJob(job)).error).toMatchObject({
        code: ExitCode.Usage,
        message: `${job.out} exists: pass --resume to continue that batch, or choose another --out`
      })
      expect(Fs.readFileSync(job.out, "utf8")).toBe("")
      expect(Fs.existsSync(`${job.out}.checkpoint.json`)).toBe(false)
    }))

  it.live("on a terminal: the bar, whole at the end, counting every run", () =>
    Effect.gen(function*() {
      const { outcome, written } = yield* stderrDuring(runJob(jobOf(directory(), UIDS, { interactive: true })))
      expect(outcome.error).toBeUndefined()
      // Done: the rate and the time it took, no time left.
      expect(written.at(-1)).toMatch(
        /^\r\[#{24}\] 3\/3 done: 3 succeeded, 0 failed, 0 skipped \(\d+\.\d\/s, (\d+ ms|\d+\.\d s) elapsed\)\x1b\[K\n$/
      )
    }))

  it.live("progress, not on a terminal: a plain line as often as asked", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, UIDS, { progressEvery: Duration.millis(5), concurrency: 1 })
      const { console, lines } = yield* capturing
      yield* Effect.gen(function*() {
        const server = yield* MockClinicalServer.MockClinicalServer
        yield* server.injectFaults("medications", UIDS.map(() => MockClinicalServer.Fault.delay(30)))
        return yield* BatchJob.run(job)
      }).pipe(Effect.provide(client()), Effect.withConsole(console))
      const progress = lines.filter((line) => /^\d\/3 done/.test(line))
      expect(progress.length).toBeGreaterThan(0)
      expect(progress.some((line) => / left\)$/.test(line))).toBe(true)
      for (const line of progress) {
        // The rate, the time so far and, once a rate is known and persons are left, the time left.
        expect(line).toMatch(
          /^(\d)\/3 done: (\d) succeeded, 0 failed, 0 skipped \(\d+\.\d\/s, (\d+ ms|\d+\.\d s) elapsed(, about (\d+ ms|\d+\.\d s) left)?\)$/
        )
        const [, done, succeeded] = /^(\d)\/3 done: (\d) succeeded/.exec(line)!
        expect(done).toBe(succeeded)
      }
    }))

  it.live("not on a terminal: no bar is drawn, at the end either", () =>
    Effect.gen(function*() {
      const { outcome, written } = yield* stderrDuring(runJob(jobOf(directory(), UIDS)))
      expect(outcome.error).toBeUndefined()
      expect(written).toEqual([])
    }))
})

describe("batchJob's files and counts (issue 24's mutation run)", () => {
  it("failures are counted by kind, at most ten kinds, the rest together; a long ErrorType is cut", () => {
    const counts = new BatchJob.FailureCounts()
    expect(counts.describe()).toBeUndefined()
    for (let i = 0; i < 12; i++) counts.add(`Kind${i}`)
    counts.add("Kind0")
    counts.add("Kind11")
    expect(counts.describe()).toBe(
      "2 Kind0, 1 Kind1, 1 Kind2, 1 Kind3, 1 Kind4, 1 Kind5, 1 Kind6, 1 Kind7, 1 Kind8, 1 Kind9, 3 of other kinds"
    )
    const apiError = (errorType: string) =>
      new ClinicalError.ApiError({
        operation: "medications",
        method: "POST",
        url: "https://clinical.test/api/clinical/medication/get",
        status: 200,
        errorType,
        errorMessage: null
      })
    const long = apiError("X".repeat(70))
    expect(BatchJob.failureKind(long)).toBe(`ApiError ${"X".repeat(50)}…`)
    expect(BatchJob.failureKind(long)).toHaveLength(BatchJob.MAX_KIND)
    const exact = apiError("Y".repeat(51))
    expect(BatchJob.failureKind(exact)).toBe(`ApiError ${"Y".repeat(51)}`)
  })

  it.live("a results line cut by a crash (no newline at its end) is dropped on resume, and its person sent again", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, UIDS)
      yield* runJob(job)
      const lines = Fs.readFileSync(job.out, "utf8").split("\n").filter((line) => line !== "")
      const [kept, cut] = [lines.slice(0, 2), lines[2]!]
      Fs.writeFileSync(job.out, `${kept.join("\n")}\n${cut.slice(0, -1)}`)
      const again = yield* runJob({ ...job, resume: true })
      expect(again.error).toBeUndefined()
      expect(again.lines.join("\n")).toContain("3 persons: 3 succeeded, 0 failed, 0 skipped (2 done in earlier runs)")
      expect(results(job.out).map((line) => line.index).sort()).toEqual([0, 1, 2])
      // Whole again: a resume of a file that ends in a newline keeps every line.
      const third = yield* runJob({ ...job, resume: true })
      expect(third.lines.join("\n")).toContain("(3 done in earlier runs)")
    }))

  it.live("a resume finds the checkpoint but no results file: nothing was done, every person is sent", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, UIDS)
      yield* runJob(job)
      Fs.unlinkSync(job.out)
      const again = yield* runJob({ ...job, resume: true })
      expect(again.error).toBeUndefined()
      expect(again.lines.join("\n")).toContain("3 persons: 3 succeeded, 0 failed, 0 skipped\n")
      expect(results(job.out)).toHaveLength(3)
    }))

  it.live("a resume whose checkpoint is not JSON is refused as not one this version wrote", () =>
    Effect.gen(function*() {
      const job = jobOf(directory(), UIDS)
      yield* runJob(job)
      Fs.writeFileSync(`${job.out}.checkpoint.json`, "{ not json")
      expect((yield* runJob({ ...job, resume: true })).error).toMatchObject({
        code: ExitCode.Usage,
        message: "--resume: the checkpoint file is not one this version wrote; use another --out"
      })
    }))

  it.live("a resume of another batch (another operation) is refused, naming what differs", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, UIDS)
      yield* runJob(job)
      const other = yield* runJob({ ...job, resume: true, operation: PersonData.ethnicities })
      expect(other.error).toMatchObject({ code: ExitCode.Usage })
      expect(other.error?.message).toMatch(/^--resume: .+; use another --out$/)
      expect(results(job.out)).toHaveLength(3)
    }))

  it.live("a link planted where the results go is refused; so is something that is not a file", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, UIDS)
      Fs.symlinkSync(Path.join(dir, "elsewhere"), job.out)
      expect((yield* runJob(job)).error).toMatchObject({
        code: ExitCode.Usage,
        message: `${job.out} is a symbolic link: give the path of the file itself`
      })
      expect(Fs.existsSync(Path.join(dir, "elsewhere"))).toBe(false)
      const other = directory()
      const directoryJob = jobOf(other, UIDS)
      Fs.mkdirSync(directoryJob.out)
      expect((yield* runJob({ ...directoryJob, resume: false })).error).toMatchObject({
        code: ExitCode.Usage,
        message: `${directoryJob.out} is not a regular file`
      })
    }))

  it.live("a resume keeps the lines done byte for byte, more than a MiB of them, whatever bytes they hold", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, UIDS)
      yield* runJob(job)
      // Three lines of 600 KB (over the MiB held before a write), with bytes that are not UTF-8.
      const padded = Buffer.concat(UIDS.map((_, index) =>
        Buffer.concat([
          Buffer.from(`{"index":${index},"outcome":"Success","items":[],"pad":"`),
          Buffer.alloc(600_000, 0xe9),
          Buffer.from([0xff, 0xc3]),
          Buffer.from(`"}\n`)
        ])
      ))
      Fs.writeFileSync(job.out, padded)
      const again = yield* runJob({ ...job, resume: true })
      expect(again.error).toBeUndefined()
      expect(again.lines.join("\n")).toContain("(3 done in earlier runs)")
      expect(Fs.readFileSync(job.out).equals(padded)).toBe(true)
    }))

  it.live("a results file that cannot be replaced on resume: exit 1 naming the file and the cause, nothing left beside it", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, UIDS)
      yield* runJob(job)
      const before = Fs.readFileSync(job.out)
      vi.mocked(Files.replace).mockRejectedValueOnce(Object.assign(new Error("cross-device link"), { code: "EXDEV" }))
      const again = yield* runJob({ ...job, resume: true })
      expect(again.error).toMatchObject({
        code: ExitCode.Failure,
        message: `cannot read and rewrite ${job.out}: EXDEV`
      })
      expect(Fs.readdirSync(dir).sort()).toEqual(["out.ndjson", "out.ndjson.checkpoint.json", "persons.txt"])
      expect(Fs.readFileSync(job.out).equals(before)).toBe(true)
    }))

  it.live("a results file in a directory that does not exist: exit 2 naming the file and the cause", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, UIDS, { out: Path.join(dir, "missing", "out.ndjson") })
      expect((yield* runJob(job)).error).toMatchObject({
        code: ExitCode.Usage,
        message: `cannot write ${job.out}.checkpoint.json: ENOENT`
      })
    }))

  it.live("a results directory others may write to: a warning, and the batch runs", () =>
    Effect.gen(function*() {
      const dir = directory()
      const shared = Path.join(dir, "shared")
      Fs.mkdirSync(shared)
      Fs.chmodSync(shared, 0o1777)
      const job = jobOf(dir, UIDS, { out: Path.join(shared, "out.ndjson") })
      const { error, lines } = yield* runJob(job)
      expect(error).toBeUndefined()
      expect(lines[0]).toBe(
        `warning: other users may create files in the directory of ${job.out}; the results are written ` +
          `owner-only and never through a link, but a directory of your own is safer`
      )
      expect(results(job.out)).toHaveLength(3)
      // A directory of one's own: no warning.
      const own = yield* runJob(jobOf(directory(), UIDS))
      expect(own.lines.join("\n")).not.toContain("warning")
    }))

  it.live("interrupted: how many persons are in the results file, and how to go on", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, UIDS, { concurrency: 1 })
      const { console, lines } = yield* capturing
      yield* Effect.gen(function*() {
        const server = yield* MockClinicalServer.MockClinicalServer
        yield* server.injectFaults("medications", [
          MockClinicalServer.Fault.delay(1),
          MockClinicalServer.Fault.delay(60_000)
        ])
        const batch = yield* Effect.fork(BatchJob.run(job))
        // The first person's line is written; the second person's answer never comes.
        while (!Fs.existsSync(job.out) || Fs.readFileSync(job.out, "utf8") === "") yield* Effect.sleep(5)
        yield* Fiber.interrupt(batch)
      }).pipe(Effect.provide(client()), Effect.withConsole(console))
      expect(results(job.out)).toHaveLength(1)
      expect(lines).toEqual([
        `\ninterrupted: 1 of 3 persons are in ${job.out}; run the same command with --resume to continue`
      ])
    }))

  it.live("on a terminal, while it runs: the bar as often as asked, partly filled", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, UIDS, { interactive: true, progressEvery: Duration.millis(5), concurrency: 1 })
      const { written } = yield* stderrDuring(
        Effect.gen(function*() {
          const server = yield* MockClinicalServer.MockClinicalServer
          yield* server.injectFaults("medications", UIDS.map(() => MockClinicalServer.Fault.delay(30)))
          return yield* BatchJob.run(job)
        }).pipe(Effect.provide(client()), Effect.withConsole((yield* capturing).console))
      )
      const partial = written.slice(0, -1).filter((chunk) => /^\r\[#* *\] [0-2]\/3 done/.test(chunk))
      expect(partial.length).toBeGreaterThan(0)
      for (const chunk of partial) {
        const [, filled, done] = /^\r\[(#*) *\] (\d)\/3/.exec(chunk)!
        expect(filled!.length).toBe(Math.round((Number(done) / 3) * 24))
        expect(chunk).toMatch(/^\r\[[# ]{24}\] .+\x1b\[K$/)
      }
    }))

  it("a failure kind: an ApiError without an ErrorType is named by its tag alone", () => {
    const error = new ClinicalError.ApiError({
      operation: "medications",
      method: "POST",
      url: "https://clinical.test/api/clinical/medication/get",
      status: 200,
      errorType: null,
      errorMessage: null
    })
    expect(BatchJob.failureKind(error)).toBe("ApiError")
  })

  it.live("resumed on a terminal: the bar counts the persons done in earlier runs", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, UIDS)
      yield* runJob(job)
      const lines = Fs.readFileSync(job.out, "utf8").split("\n").filter((line) => line !== "")
      Fs.writeFileSync(job.out, `${lines.slice(0, 2).join("\n")}\n`)
      const { outcome, written } = yield* stderrDuring(runJob({ ...job, resume: true, interactive: true }))
      expect(outcome.error).toBeUndefined()
      expect(written.at(-1)).toMatch(/^\r\[#{24}\] 3\/3 done: 3 succeeded, 0 failed, 0 skipped /)
    }))

  it.live("a resume leaves the checkpoint it found as it was", () =>
    Effect.gen(function*() {
      const dir = directory()
      const job = jobOf(dir, UIDS)
      yield* runJob(job)
      const before = Fs.statSync(`${job.out}.checkpoint.json`)
      expect((yield* runJob({ ...job, resume: true })).error).toBeUndefined()
      expect(Fs.statSync(`${job.out}.checkpoint.json`).ino).toBe(before.ino)
    }))

  it.live("a batch of one person whose credentials are refused: exit 4, stopped early and why", () =>
    Effect.gen(function*() {
      const job = jobOf(directory(), [UIDS[0]!])
      const { error, lines } = yield* runJob(job, "0f8fad5b-d9cb-469f-a165-70867728950e")
      expect(error).toMatchObject({ code: ExitCode.CredentialsRefused })
      expect(lines.join("\n")).toContain("batch medications: 1 person: 0 succeeded, 1 failed, 0 skipped")
      expect(lines.join("\n")).toContain("stopped early: the credentials were refused: ")
    }))

  it.live("stopped by transport failures in a row: why, in the summary, and the rest left to send again", () =>
    Effect.gen(function*() {
      const persons = Array.from({ length: 14 }, (_, i) => UIDS[i % UIDS.length]!)
      const job = jobOf(directory(), persons, { concurrency: 1 })
      const { console, lines } = yield* capturing
      const outcome = yield* Effect.gen(function*() {
        const server = yield* MockClinicalServer.MockClinicalServer
        yield* server.injectFaults("medications", persons.map(() => MockClinicalServer.Fault.drop))
        return yield* Effect.either(BatchJob.run(job))
      }).pipe(Effect.provide(client()), Effect.withConsole(console))
      expect(Either.isLeft(outcome) && outcome.left).toMatchObject({ code: ExitCode.BatchIncomplete })
      const summary = lines.join("\n").split("\n")
      expect(summary[0]).toBe(
        `batch medications: 14 persons: 0 succeeded, ${PersonData.DEFAULT_STOP_AFTER_TRANSPORT_FAILURES} failed, ` +
          `${14 - PersonData.DEFAULT_STOP_AFTER_TRANSPORT_FAILURES} skipped`
      )
      expect(summary.some((line) => line.startsWith("stopped early: too many transport failures in a row: "))).toBe(
        true
      )
      expect(summary).toContain(
        "14 persons failed for a cause that may go away or were not sent: " +
          "fix the cause and run the same command with --resume to send them again"
      )
      expect(results(job.out)).toHaveLength(PersonData.DEFAULT_STOP_AFTER_TRANSPORT_FAILURES)
    }))

  it.live("the results file never holds a PersonUid the server echoed in an answer", () =>
    Effect.gen(function*() {
      const job = jobOf(directory(), [UIDS[0]!])
      const echoed = {
        Medications: [{ Name: `for ${UIDS[0]}`, Note: UIDS[0]!.toUpperCase() }],
        Success: true,
        ErrorMessage: null,
        ErrorType: null
      }
      const { console } = yield* capturing
      yield* Effect.gen(function*() {
        const server = yield* MockClinicalServer.MockClinicalServer
        yield* server.injectFaults("medications", [MockClinicalServer.Fault.status(200, { body: echoed })])
        return yield* BatchJob.run(job)
      }).pipe(Effect.provide(client()), Effect.withConsole(console))
      const text = Fs.readFileSync(job.out, "utf8")
      expect(results(job.out)).toHaveLength(1)
      expect(text.toLowerCase()).not.toContain(UIDS[0]!.toLowerCase())
    }))

  it.live("a batch option the batch refuses: exit 2 with its reason, no results line", () =>
    Effect.gen(function*() {
      const job = jobOf(directory(), UIDS, { concurrency: 0 })
      const { error } = yield* runJob(job)
      expect(error).toMatchObject({ _tag: "CliError", code: ExitCode.Usage })
      expect(error?.message).toMatch(/concurrency.*must be a whole number from 1 to 100000/)
      expect(results(job.out)).toEqual([])
    }))

  it.live("a batch, new or resumed, leaves no file open; nor a resume that cannot make its new results file", () =>
    Effect.gen(function*() {
      const job = jobOf(directory(), UIDS)
      const before = openDescriptors()
      yield* runJob(job)
      expect(openDescriptors()).toBe(before)
      yield* runJob({ ...job, resume: true })
      expect(openDescriptors()).toBe(before)
      vi.mocked(Files.createBeside).mockRejectedValueOnce(Object.assign(new Error("no space"), { code: "ENOSPC" }))
      const refused = yield* runJob({ ...job, resume: true })
      expect(refused.error).toMatchObject({
        code: ExitCode.Failure,
        message: `cannot read and rewrite ${job.out}: ENOSPC`
      })
      expect(openDescriptors()).toBe(before)
    }))

  it.live("each file the batch cannot read or write: the exit code and a message naming the file and the cause", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<
        { operation: FileOperation; file: string; verb: string; code: number; resume: boolean }
      > = [
        {
          operation: Files.writeReplacing,
          file: ".checkpoint.json",
          verb: "write",
          code: ExitCode.Usage,
          resume: false
        },
        { operation: Files.createNew, file: "", verb: "create", code: ExitCode.Usage, resume: false },
        { operation: Files.kindAt, file: "", verb: "read", code: ExitCode.Usage, resume: false },
        { operation: Files.openToRead, file: ".checkpoint.json", verb: "read", code: ExitCode.Failure, resume: true },
        { operation: Files.openToRead, file: "", verb: "read and rewrite", code: ExitCode.Failure, resume: true }
      ]
      for (const { code, file, operation, resume, verb } of cases) {
        const job = jobOf(directory(), UIDS)
        if (resume) yield* runJob(job)
        const path = `${job.out}${file}`
        const restore = failingFor(operation, path)
        const { error } = yield* Effect.ensuring(runJob({ ...job, resume }), Effect.sync(restore))
        expect(error).toMatchObject({ code, message: `cannot ${verb} ${path}: EIO` })
      }
    }))

  it.live("a results line that cannot be written: exit 1 naming the file and the cause", () =>
    Effect.gen(function*() {
      const job = jobOf(directory(), UIDS)
      const mocked = vi.mocked(Files.createNew)
      const actual = mocked.getMockImplementation()!
      mocked.mockImplementationOnce(async (path) => {
        const handle = await actual(path)
        return Object.assign(Object.create(handle) as typeof handle, {
          write: () => Promise.reject(Object.assign(new Error("no space"), { code: "ENOSPC" })),
          close: () => handle.close()
        })
      })
      const { error } = yield* runJob(job)
      expect(error).toMatchObject({ code: ExitCode.Failure, message: `cannot write ${job.out}: ENOSPC` })
    }))
})
