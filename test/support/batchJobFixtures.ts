/**
 * What the BatchJob*.test.ts files share: a job over persons in a directory of its own (removed after
 * the file: `removeDirectoriesAfterAll`), run in this process over a fresh in-memory mock with what it
 * says on stderr captured, and the results file read back.
 */
import { afterAll } from "@effect/vitest"
import { type Console, Duration, Effect, Either, Layer } from "effect"
import { ClinicalClient, PersonData } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as BatchJob from "../../src/cli/batchJob.js"

/** What `run` writes to process.stderr (the progress bar's way out), and its outcome. */
export const stderrDuring = <A, E, R>(run: Effect.Effect<A, E, R>) =>
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
export const openDescriptors = () => Fs.readdirSync("/proc/self/fd").length

export const UIDS = MockClinicalServer.fixturePersons.map((person) => person.personUid)

/** A client over a fresh in-memory mock (no retries: each fault is one outcome), the mock in context. */
export const client = (applicationId: string = MockClinicalServer.demoApplicationId) =>
  ClinicalClient.layer({ baseUrl: "http://127.0.0.1:9", applicationId, maxRetries: 0 }).pipe(
    Layer.provideMerge(MockClinicalServer.layerTransport())
  )

/** A console whose `error` lines (what the job says on stderr) are kept in `lines`. */
export const capturing = Effect.map(Effect.console, (current) => {
  const lines: Array<string> = []
  const console: Console.Console = {
    ...current,
    error: (...args: ReadonlyArray<unknown>) => Effect.sync(() => void lines.push(args.map(String).join(" ")))
  }
  return { lines, console }
})

// Each test's own directory, all removed after the file: a mutation run makes thousands.
const directories: Array<string> = []
export const directory = () => {
  const made = Fs.mkdtempSync(Path.join(Os.tmpdir(), "batch-job-"))
  directories.push(made)
  return made
}

/** Removes, after the file's tests, every directory `directory` made. */
export const removeDirectoriesAfterAll = (): void => {
  afterAll(() => {
    for (const made of directories) Fs.rmSync(made, { recursive: true, force: true })
  })
}

export const jobOf = (dir: string, persons: ReadonlyArray<string>, extra: Partial<BatchJob.Job> = {}): BatchJob.Job => {
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
export const runJob = (job: BatchJob.Job, applicationId?: string) =>
  Effect.gen(function*() {
    const { console, lines } = yield* capturing
    const outcome = yield* BatchJob.run(job).pipe(
      Effect.provide(client(applicationId)),
      Effect.withConsole(console),
      Effect.either
    )
    return { error: Either.isLeft(outcome) ? outcome.left : undefined, lines }
  })

export const results = (path: string) =>
  Fs.readFileSync(path, "utf8").split("\n").filter((line) => line !== "").map((line) =>
    JSON.parse(line) as { index: number; outcome: string; items?: unknown; error?: { _tag: string } }
  )
