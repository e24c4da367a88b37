/**
 * A resumed `cli/batchJob.run` (issue 24's mutation run): a line cut by a crash, a checkpoint without
 * results or not JSON, another batch's checkpoint, a link where the results go, the lines done kept
 * byte for byte, the bar counting earlier runs, the checkpoint left as it was.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { PersonData } from "effect-clinical"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { ExitCode } from "../src/cli/outcome.js"
import {
  directory,
  jobOf,
  removeDirectoriesAfterAll,
  results,
  runJob,
  stderrDuring,
  UIDS
} from "./support/batchJobFixtures.js"

removeDirectoriesAfterAll()

describe("batchJob's files and counts (issue 24's mutation run)", () => {
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
})
