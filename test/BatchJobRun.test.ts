/**
 * `effect-clinical batch`'s job, run in this process (`cli/batchJob.run`) over the in-memory mock:
 * what it writes to the results file, what it says on stderr, which exit code its failure carries,
 * and the progress it shows. The command line's own tests (test/CliBatch.test.ts) run the built
 * executable; these run the source, so that mutation testing reaches the batch's decisions.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either } from "effect"
import { MockClinicalServer } from "effect-clinical/testing"
import * as Fs from "node:fs"
import * as BatchJob from "../src/cli/batchJob.js"
import { ExitCode } from "../src/cli/outcome.js"
import {
  capturing,
  client,
  directory,
  jobOf,
  removeDirectoriesAfterAll,
  results,
  runJob,
  stderrDuring,
  UIDS
} from "./support/batchJobFixtures.js"

removeDirectoriesAfterAll()

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
