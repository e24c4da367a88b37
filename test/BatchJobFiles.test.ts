/**
 * The files of `cli/batchJob.run` when the file system refuses them (issue 24's mutation run): each
 * file the batch cannot read, write or replace, with its exit code and a message naming the file and
 * the cause; a results directory others may write to; no file left open.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { vi } from "vitest"
import * as Files from "../core/files.js"
import { ExitCode } from "../src/cli/outcome.js"
import {
  directory,
  jobOf,
  openDescriptors,
  removeDirectoriesAfterAll,
  results,
  runJob,
  UIDS
} from "./support/batchJobFixtures.js"

removeDirectoriesAfterAll()

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
describe("batchJob's files and counts (issue 24's mutation run)", () => {
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
