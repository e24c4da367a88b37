/**
 * One job of effect-clinical/bullmq, processed on a real redis-server by real BullMQ, seen as its
 * user sees it when it fails: what the failed job keeps (its reason, its one-line stack trace), what
 * the metrics count (jobs by outcome, failures by kind, at most 20 kinds), what `onError` hears, and
 * what BullMQ's own tools (a dashboard) see. The persons are read through a PersonData layer of the
 * test's own, each answer scripted. The queue's wider behaviour, over the mock, is test/QueueWork.test.ts.
 */
import { Effect, Redacted } from "effect"
import { ClinicalError, PersonData } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { describe, expect, it } from "vitest"
import { expectNone } from "./support/Leaks.js"
import { bullQueue, connect, enqueue, eventually, queueOptions, status, useServers } from "./support/queueServers.js"
import {
  at,
  failuresByKind,
  found,
  jobsByOutcome,
  notFound,
  scripted,
  since,
  taggedNow,
  work
} from "./support/scriptedWorkers.js"

useServers()

/** The failed jobs as BullMQ holds them: each one's reason and stack trace. */
const failedJobs = async () =>
  (await bullQueue().getFailed()).map((job) => ({ reason: job.failedReason, stacktrace: job.stacktrace }))

describe("what BullMQ keeps of a failure, and what the metrics count", () => {
  it("a failure for good and one out of attempts: reasons by kind, a stack trace of that line alone; each counted once", async () => {
    const outcomes = jobsByOutcome()
    const failures = failuresByKind()
    await enqueue(["Known000000000000000000000==", "Gone00000000000000000000000==", "Flaky0000000000000000000000=="], {
      attempts: 2
    })
    const { layer } = scripted((personUid) =>
      personUid.startsWith("Gone")
        ? Effect.fail(notFound())
        : personUid.startsWith("Flaky")
        ? Effect.fail(new ClinicalError.ServerError({ ...at, status: 500 }))
        : Effect.succeed(found)
    )
    await work(layer, async () => (await status()).failed === 2)
    const failed = await failedJobs()
    const gone = failed.find((job) => job.reason.startsWith("ApiError"))!
    const flaky = failed.find((job) => job.reason.startsWith("ServerError"))!
    expect(gone.reason).toMatch(/^ApiError PersonNotFound: /)
    // The text BullMQ shows as the stack: the error's name and message, no file of this library.
    expect(gone.stacktrace).toEqual([`UnrecoverableError: ${gone.reason}`])
    expect(flaky.stacktrace).toEqual([`Error: ${flaky.reason}`, `Error: ${flaky.reason}`])
    expect(since(outcomes, jobsByOutcome())).toEqual({ completed: 1, failed: 2, retried: 1 })
    // A success counts no failure.
    expect(since(failures, failuresByKind())).toEqual(taggedNow({ "ApiError PersonNotFound": 1, ServerError: 2 }))
  })
})

describe("what BullMQ's own tools see (a dashboard such as bull-board)", () => {
  it("jobs named by run and position; completed ones kept (bounded); BullMQ's metrics counting them", async () => {
    const uids = Array.from({ length: 6 }, (_, i) => `Shown${i}000000000000000000000==`)
    await enqueue(uids)
    const { layer } = scripted((personUid) =>
      personUid.startsWith("Shown5") ? Effect.fail(notFound()) : Effect.succeed(found)
    )
    const records = await work(layer, (done) => done.length === 6)
    const queue = bullQueue()
    // Each job's name is its run and the `index` of its record: a failure maps to its input line.
    const failed = await queue.getFailed()
    expect(failed.map((job) => job.name)).toEqual(["run 1 index 5"])
    expect(records.find((record) => record.outcome === "Failure")!.index).toBe(5)
    // The completed jobs are kept (BullMQ's removeOnComplete: the newest 1,000).
    const completed = await queue.getCompleted()
    expect(completed.map((job) => job.name).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `run 1 index ${i}`))
    expect(completed[0]!.opts.removeOnComplete).toEqual({ count: 1_000 })
    // BullMQ's own per-minute metrics count them (its getMetrics, what dashboards draw).
    await eventually(async () => (await queue.getMetrics("completed")).meta.count === 5)
    expect((await queue.getMetrics("failed")).meta.count).toBe(1)
    // Kept, they hold no PersonUid: sealed data, a name, timestamps.
    expectNone("completed jobs", JSON.stringify(completed.map((job) => job.toJSON())), uids)
  })
})

describe("what BullMQ keeps of a failure, and what the metrics count (more)", () => {
  it("a server inventing an ErrorType per person: 20 kinds counted apart, every other one as `other`", async () => {
    const apartBefore = [...failuresByKind().keys()].filter((kind) => kind !== "other").length
    const failures = failuresByKind()
    const uids = Array.from({ length: 25 }, (_, i) => `Invented${String(i).padStart(4, "0")}00000000000000==`)
    await enqueue(uids, { attempts: 1 })
    const { layer } = scripted((personUid) => Effect.fail(notFound(`Type${personUid.slice(8, 12)}`)))
    await work(layer, (records) => records.length === 25)
    await eventually(async () => (await status()).failed === 25)
    const counted = since(failures, failuresByKind())
    const apart = [...failuresByKind().keys()].filter((kind) => kind !== "other")
    expect(apart).toHaveLength(20)
    // Each failure counted once: the kinds that found room under their names, the rest as other.
    expect(Object.values(counted).reduce((sum, n) => sum + n, 0)).toBe(25)
    expect(counted.other).toBe(25 - (20 - apartBefore))
  })

  it("a job that holds no seal, or another job's: failed for good as Unsealable, counted so, nobody read", async () => {
    await enqueue(["Person0000000000000000000000==", "Person1111111111111111111111=="])
    const admin = connect()
    const ids = (await admin.keys("bull:test:*")).filter((key) => /^bull:test:[0-9a-f]{32}$/.test(key))
    await admin.hset(ids[1]!, "data", (await admin.hget(ids[0]!, "data"))!)
    // Added by something else than effect-clinical: a seal too short to hold anyone.
    await bullQueue().add("medications", { sealed: "c2hvcnQ=" })
    const outcomes = jobsByOutcome()
    const failures = failuresByKind()
    const { asked, layer } = scripted(() => Effect.succeed(found))
    await work(layer, async () => (await status()).failed === 2)
    expect((await failedJobs()).map((job) => [job.reason, job.stacktrace]).sort()).toEqual([
      ["Unsealable: the job's sealed person is another job's", [
        "UnrecoverableError: Unsealable: the job's sealed person is another job's"
      ]],
      ["Unsealable: the job's sealed person is cut short", [
        "UnrecoverableError: Unsealable: the job's sealed person is cut short"
      ]]
    ])
    expect(asked()).toBe(1)
    expect(since(outcomes, jobsByOutcome())).toEqual({ completed: 1, failed: 2 })
    expect(since(failures, failuresByKind())).toEqual(taggedNow({ Unsealable: 2 }))
  })

  it("a job of another operation than the worker reads: failed for good as OperationRefused, counted so", async () => {
    await enqueue(["Person0000000000000000000000=="], { operation: PersonData.ethnicities })
    // A queue with no record of its own (removed): nothing refuses the worker at start.
    await connect().del("bull:test:effect-clinical")
    const outcomes = jobsByOutcome()
    const failures = failuresByKind()
    const { asked, layer } = scripted(() => Effect.succeed(found))
    await work(layer, async () => (await status()).failed === 1)
    expect(await failedJobs()).toEqual([{
      reason: "OperationRefused: the job reads another operation than this worker",
      stacktrace: ["UnrecoverableError: OperationRefused: the job reads another operation than this worker"]
    }])
    expect(asked()).toBe(0)
    expect(since(outcomes, jobsByOutcome())).toEqual({ failed: 1 })
    expect(since(failures, failuresByKind())).toEqual(taggedNow({ OperationRefused: 1 }))
  })

  it("a call that throws and a sink that throws: BullMQ keeps which one did; onError hears it, scrubbed, cut at 500", async () => {
    const dying = "Dying00000000000000000000000=="
    const sunk = "Sunk000000000000000000000000=="
    await enqueue([dying, sunk], { attempts: 1 })
    const { layer } = scripted((personUid) =>
      personUid === dying ? Effect.die(new Error(`no row for ${personUid}`)) : Effect.succeed(found)
    )
    const told: Array<ClinicalQueue.QueueError | ClinicalError.InvalidConfig> = []
    await work(layer, async () => (await status()).failed === 2, {
      onError: (error) => told.push(error),
      sink: (record) => {
        throw new Error(`duplicate row for ${Redacted.value(record.personUid)}: ${"x".repeat(1_000)}`)
      }
    })
    expect((await failedJobs()).map((job) => [job.reason, job.stacktrace]).sort()).toEqual([
      ["CallFailed: the call threw (its error went to onError)", [
        "Error: CallFailed: the call threw (its error went to onError)"
      ]],
      ["SinkFailed: the sink threw (its error went to onError)", [
        "Error: SinkFailed: the sink threw (its error went to onError)"
      ]]
    ])
    const heard: Array<Record<string, unknown>> = told.map((error) => ({ ...error }))
    heard.sort((a, b) => String(a.detail).localeCompare(String(b.detail)))
    expect(heard).toEqual([
      { _tag: "QueueError", operation: "work", detail: expect.stringMatching(/^CallFailed: .*no row for <redacted>/) },
      {
        _tag: "QueueError",
        operation: "work",
        detail: expect.stringMatching(/^SinkFailed: duplicate row for <redacted>: x+$/)
      }
    ])
    expect(heard[1]!.detail).toHaveLength(500)
    expectNone("onError", JSON.stringify(heard), [dying, sunk])
  })

  it("a failure of a named run retried into a success moves from its failed count to its done count", async () => {
    await enqueue(["Late0000000000000000000000=="], { attempts: 1, inputId: "list" })
    // Unknown at first; known when retried.
    const { layer } = scripted((_, before) => before === 0 ? Effect.fail(notFound()) : Effect.succeed(found))
    await work(layer, async () => (await status()).failed === 1)
    expect((await status()).run).toMatchObject({ persons: 1, done: 0, failed: 1 })
    expect(await Effect.runPromise(ClinicalQueue.retryFailed(queueOptions()))).toBe(1)
    await work(layer, async () => (await status()).run?.done === 1)
    expect((await status()).run).toMatchObject({ persons: 1, done: 1, failed: 0 })
  })
})
