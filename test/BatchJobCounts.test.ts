/**
 * How `cli/batchJob.run` counts and says what happened (issue 24's mutation run): failures by kind,
 * an interruption, the bar while it runs, a batch stopped early by refused credentials or transport
 * failures, a refused option; and no echoed PersonUid in the results file.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Fiber } from "effect"
import { ClinicalError, PersonData } from "effect-clinical"
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
})
