/**
 * effect-clinical/bullmq's workers in one process, on a real redis-server with real BullMQ, against
 * the mock served over loopback: what the workers send and hand their sink, how each kind of
 * failure maps onto BullMQ (retries, the fleet's pause, refused keys), the fleet-wide bounds, the
 * metrics, close(), and what a job reads sealed in it. The fleet of processes (the CLI's `queue
 * work`) is test/QueueFleet.test.ts.
 */
import { Effect, Either, Metric, Redacted } from "effect"
import { PersonData } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { describe, expect, it } from "vitest"
import { expectNone } from "./support/Leaks.js"
import * as QueueEvents from "./support/QueueEvents.js"
import {
  connect,
  enqueue,
  eventually,
  mock,
  OTHER_KEY,
  queueOptions,
  redis,
  status,
  useServers
} from "./support/queueServers.js"
import { clientLayer, everything, persons, work } from "./support/queueWorkers.js"

useServers(persons)

describe("work", () => {
  it("two workers: every person once to the sink, with their medications; one token request", async () => {
    await enqueue(persons.map((person) => person.personUid))
    const records = await work(2, (done) => done.length >= persons.length)
    expect(records).toHaveLength(persons.length)
    expect(new Set(records.map((record) => record.index)).size).toBe(persons.length)
    for (const record of records) {
      expect(record.outcome).toBe("Success")
      expect(Redacted.value(record.personUid)).toBe(persons[record.index]!.personUid)
      if (record.outcome === "Success") {
        expect(record.result.items).toHaveLength(persons[record.index]!.medications.length)
      }
    }
    const counters = await mock.counters()
    expect(counters.tokenRequests).toBe(1)
    expect(counters.medicationRequests).toBe(persons.length)
    const after = await status()
    expect(after).toMatchObject({ waiting: 0, active: 0, failed: 0, delayed: 0 })
    expectNone("Redis", await everything(), persons.map((person) => person.personUid))
  })

  it("an unknown person fails at once (UnrecoverableError): one request, its kind recorded, no PersonUid kept", async () => {
    const unknown = "UnKnownPersonUid0000000000000000000=="
    await enqueue([unknown])
    const records = await work(1, (done) => done.length >= 1)
    expect(records).toMatchObject([{ outcome: "Failure", index: 0, error: { _tag: "ApiError" } }])
    // Wait for BullMQ to record the failure.
    let after = await status()
    for (let i = 0; i < 50 && after.failed === 0; i++) after = await status()
    expect(after.failed).toBe(1)
    expect(after.failedByKind).toEqual([[expect.stringMatching(/^ApiError/), 1]])
    expect((await mock.counters()).medicationRequests).toBe(1)
    expectNone("Redis", await everything(), [unknown])
  })

  it("a transient failure is thrown and retried by BullMQ with backoff, then succeeds", async () => {
    await enqueue([persons[0]!.personUid])
    // The client's own retries are off: each 503 reaches BullMQ, which tries the job again.
    await mock.injectFaults("medications", [MockClinicalServer.Fault.status(500), MockClinicalServer.Fault.status(500)])
    const records = await work(1, (done) => done.length >= 1, { maxRetries: 0 })
    expect(records).toMatchObject([{ outcome: "Success", index: 0 }])
    expect((await mock.counters()).medicationRequests).toBe(3)
  })

  it("out of attempts: the last failure goes to the sink, and the job is failed; retryFailed gives it its attempts afresh", async () => {
    await enqueue([persons[0]!.personUid], { attempts: 2 })
    const fail = MockClinicalServer.Fault.status(500)
    await mock.injectFaults("medications", [fail, fail])
    const records = await work(1, (done) => done.length >= 1, { maxRetries: 0 })
    expect(records).toMatchObject([{ outcome: "Failure", error: { _tag: "ServerError", status: 500 } }])
    expect((await mock.counters()).medicationRequests).toBe(2)
    let after = await status()
    for (let i = 0; i < 50 && after.failed === 0; i++) after = await status()
    expect(after.failed).toBe(1)
    expect(await Effect.runPromise(ClinicalQueue.retryFailed(queueOptions()))).toBe(1)
    // Both attempts again: the first fails, the second succeeds.
    await mock.injectFaults("medications", [fail])
    const again = await work(1, (done) => done.length >= 1, { maxRetries: 0 })
    expect(again).toMatchObject([{ outcome: "Success", index: 0 }])
    expect((await mock.counters()).medicationRequests).toBe(4)
  })

  it("a 429 with Retry-After pauses every worker of the queue: no data request during the pause", async () => {
    await enqueue(persons.slice(0, 30).map((person) => person.personUid))
    await mock.injectFaults("medications", [MockClinicalServer.Fault.status(429, { retryAfter: 2 })])
    const working = work(2, (done) => done.length >= 30, undefined, { concurrency: 1 })
    // Judged by what the pause promises, timed from the pause as Redis holds it: no job taken.
    const pause = await QueueEvents.fleetPause(redis.port, "test")
    expect(await QueueEvents.jobsTakenBetween(redis.port, "test", pause.setNoLaterThan, pause.setNoEarlierThan + 1_950))
      .toBe(0)
    expect(await working).toHaveLength(30)
    const log = (await mock.requestLog()).filter((entry) => entry.operation === "medications")
    // The other worker's job already in hand may still send its request; nothing more.
    const during = log.filter((entry) => entry.at > pause.setNoLaterThan && entry.at < pause.setNoEarlierThan + 1_800)
    expect(during.length).toBeLessThanOrEqual(1)
    expect(log.filter((entry) => entry.status === 200)).toHaveLength(30)
  })

  it("a refused ApplicationId pauses the queue with the reason; resume lets it go on", async () => {
    await enqueue(persons.slice(0, 5).map((person) => person.personUid))
    let stopRefused: () => void
    const refusedStopped = new Promise<void>((resolve) => (stopRefused = resolve))
    const refused = work(
      1,
      (done) => done.length >= 5,
      { applicationId: "00000000-0000-0000-0000-000000000001" },
      undefined,
      refusedStopped
    )
    await eventually(async () => (await status()).isPaused)
    const after = await status()
    expect(after.pausedBecause).toMatch(/token endpoint refused the ApplicationId/)
    expect((await mock.counters()).medicationRequests).toBe(0)
    // The worker with the refused id would pause it again at once: it is closed first.
    stopRefused!()
    expect(await refused).toEqual([])
    await Effect.runPromise(ClinicalQueue.resume(queueOptions()))
    expect((await status()).pausedBecause).toBeUndefined()
    expect(await work(1, (done) => done.length >= 5)).toHaveLength(5)
  })

  it("a sink that throws (its error naming the person): BullMQ keeps a fixed text, onError gets it scrubbed", async () => {
    const uid = persons[0]!.personUid
    await enqueue([uid], { attempts: 1 })
    const told: Array<string> = []
    let thrown = 0
    const client = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
    const running = await ClinicalQueue.createWorker(client, {
      ...queueOptions(),
      operation: PersonData.medications,
      onError: (error) => told.push(error.message),
      sink: (record) => {
        thrown++
        throw new Error(
          `duplicate key value violates unique constraint (person_uid)=(${Redacted.value(record.personUid)})`
        )
      }
    })
    let after = await status()
    for (let i = 0; i < 100 && after.failed === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      after = await status()
    }
    await running.close()
    await client.close()
    expect(thrown).toBe(1)
    expect(after.failedByKind).toEqual([["SinkFailed", 1]])
    expect(told.join("\n")).toContain("duplicate key value violates unique constraint (person_uid)=(<redacted>)")
    expectNone("onError", told.join("\n"), [uid])
    expectNone("Redis", await everything(), [uid])
  })

  it("a seal copied from another job (someone wrote Redis) is refused: no person read twice", async () => {
    await enqueue([persons[0]!.personUid, persons[1]!.personUid])
    const admin = connect()
    const ids = (await admin.keys("bull:test:*")).filter((key) => /^bull:test:[0-9a-f]{32}$/.test(key))
    const first = await admin.hget(ids[0]!, "data")
    await admin.hset(ids[1]!, "data", first!)
    const records = await work(1, (done) => done.length >= 1)
    let after = await status()
    for (let i = 0; i < 100 && after.failed === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      after = await status()
    }
    expect(records).toHaveLength(1)
    expect(after.failedByKind).toEqual([["Unsealable", 1]])
    expect((await mock.counters()).medicationRequests).toBe(1)
  })

  it("a worker with another sealing key is refused at start", async () => {
    await enqueue(["a"])
    const outcome = await Effect.runPromise(
      Effect.either(Effect.scoped(ClinicalQueue.worker({
        ...queueOptions(OTHER_KEY),
        operation: PersonData.medications,
        sink: () => {}
      }))).pipe(Effect.provide(clientLayer()))
    )
    expect(Either.getLeft(outcome).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "InvalidConfig",
      setting: "sealingKey"
    })
  })

  it("a fleet-wide concurrency set on the queue holds across workers: at most 2 requests in flight", async () => {
    await enqueue(persons.slice(0, 12).map((person) => person.personUid), { fleetConcurrency: 2 })
    await mock.setRandomFaults("medications", {
      seed: 1,
      faults: [{ probability: 1, fault: MockClinicalServer.Fault.delay("60 millis") }]
    })
    const records = await work(2, (done) => done.length >= 12)
    expect(records).toHaveLength(12)
    // Each request holds its job's slot for its 60 ms at least: the windows never overlap more than 2 deep.
    const starts = (await mock.requestLog()).filter((entry) => entry.operation === "medications").map((e) => e.at)
    const deepest = Math.max(...starts.map((at) => starts.filter((other) => other >= at && other < at + 60).length))
    expect(deepest).toBeLessThanOrEqual(2)
    expect(starts).toHaveLength(12)
  })

  it("a fleet-wide rate set on the queue holds across workers: 25 persons at 10 a second take 2 s at least", async () => {
    await enqueue(persons.slice(0, 25).map((person) => person.personUid), { ratePerSecond: 10 })
    // The limiter's first window opens when the first job is taken, after the workers start: the
    // 21st job, in the third window, cannot be taken before 2 s from here. (Measured from the first
    // request instead, the bound would depend on how long that request took to leave, its token
    // included.)
    const workersStart = Date.now()
    await work(2, (done) => done.length >= 25)
    const starts = (await mock.requestLog()).filter((entry) => entry.operation === "medications").map((e) => e.at)
    expect(starts).toHaveLength(25)
    expect(Math.max(...starts) - workersStart).toBeGreaterThanOrEqual(2_000)
  })

  it("metrics: jobs by outcome and failures by kind, as the OpenTelemetry exporter reads them", async () => {
    const counted = (name: string, tag: string, value: string) =>
      Metric.unsafeSnapshot().filter((pair) =>
        pair.metricKey.name === name && pair.metricKey.tags.some((t) => t.key === tag && t.value === value)
      ).reduce((sum, pair) => sum + Number((pair.metricState as { count?: number }).count ?? 0), 0)
    const figures = () => ({
      completed: counted("clinical_queue_jobs_total", "outcome", "completed"),
      failed: counted("clinical_queue_jobs_total", "outcome", "failed"),
      retried: counted("clinical_queue_jobs_total", "outcome", "retried"),
      notFound: counted("clinical_queue_failures_total", "kind", "ApiError PersonNotFound"),
      serverError: counted("clinical_queue_failures_total", "kind", "ServerError")
    })
    const before = figures()
    // The first read fails once with a 500 (the client's own retries off): BullMQ tries that person again.
    await mock.injectFaults("medications", [MockClinicalServer.Fault.status(500)])
    await enqueue([persons[0]!.personUid, persons[1]!.personUid, "NoSuchPerson0000000000000000=="])
    await work(1, (done) => done.length >= 3, { maxRetries: 0 })
    const after = figures()
    expect({
      completed: after.completed - before.completed,
      failed: after.failed - before.failed,
      retried: after.retried - before.retried,
      notFound: after.notFound - before.notFound,
      serverError: after.serverError - before.serverError
    }).toEqual({ completed: 2, failed: 1, retried: 1, notFound: 1, serverError: 1 })
  })

  it("close() waits for the jobs in hand up to closeTimeout, then leaves them (a hung call holds no shutdown)", async () => {
    await enqueue([persons[0]!.personUid])
    // A mock of its own: its answer, still delayed when the test ends, is never logged in another test's.
    const slow = await MockClinicalServer.start({ persons })
    await slow.injectFaults("medications", [MockClinicalServer.Fault.delay("3 seconds")])
    const client = createClinicalClient({ baseUrl: slow.url, applicationId: slow.applicationId })
    const records: Array<ClinicalQueue.JobRecord> = []
    const running = await ClinicalQueue.createWorker(client, {
      ...queueOptions(),
      operation: PersonData.medications,
      closeTimeout: "300 millis",
      sink: (record) => {
        records.push(record)
      }
    })
    await eventually(async () => (await slow.counters()).medicationRequests > 0)
    const closing = Date.now()
    await running.close()
    // It waited for the job in hand, its bound long...
    expect(Date.now() - closing).toBeGreaterThanOrEqual(250)
    // ...and returned before the service answered: the job was left, not finished.
    expect(records).toEqual([])
    await client.close()
    await slow.close()
  })

  it("redactEchoedSecrets: a PersonUid the service echoes in an item reaches the sink as <redacted>", async () => {
    const echoing = persons[59]!
    await enqueue([echoing.personUid])
    const records = await work(1, (done) => done.length >= 1, undefined, { redactEchoedSecrets: true })
    const items = JSON.stringify(records[0]!.outcome === "Success" && records[0]!.result.items)
    expect(items).toContain("Echo of <redacted>")
    expectNone("the items", items, [echoing.personUid])
  })

  it("the Promise form works over a Promise client", async () => {
    await enqueue(persons.slice(0, 6).map((person) => person.personUid))
    const client = createClinicalClient({
      baseUrl: mock.url,
      applicationId: mock.applicationId,
      retryRateLimited: false
    })
    const records: Array<ClinicalQueue.JobRecord> = []
    let finish: () => void
    const finished = new Promise<void>((resolve) => (finish = resolve))
    const running = await ClinicalQueue.createWorker(client, {
      ...queueOptions(),
      operation: PersonData.medications,
      sink: (record) => {
        records.push(record)
        if (records.length === 6) finish()
      }
    })
    await finished
    await running.close()
    await client.close()
    expect(records.map((record) => record.index).sort()).toEqual([0, 1, 2, 3, 4, 5])
  })
})

describe("what a job reads is sealed in it", () => {
  it("a forged record of the queue's operation changes nothing: each job reads its own operation, and its record says which", async () => {
    await enqueue(persons.slice(0, 3).map((person) => person.personUid))
    // Whoever can write Redis, without the key: the queue's record now says ethnicities.
    await connect().hset("bull:test:effect-clinical", "operation", "ethnicities")
    const records = await work(1, (done) => done.length >= 3, undefined, {
      operation: [PersonData.medications, PersonData.ethnicities]
    })
    expect(records.map((record) => record.operation)).toEqual(["medications", "medications", "medications"])
    const operations = (await mock.requestLog()).map((entry) => entry.operation).filter((op) => op !== "token")
    expect(operations).toEqual(["medications", "medications", "medications"])
  })

  it("a job of another operation than the worker reads is failed for good (OperationRefused), never read", async () => {
    await enqueue([persons[0]!.personUid])
    // A queue with no record of its own (removed): nothing refuses the worker at start.
    await connect().del("bull:test:effect-clinical")
    const refused = work(
      1,
      () => false,
      undefined,
      { operation: PersonData.ethnicities },
      (async () => {
        await eventually(async () => (await status()).failed === 1)
      })()
    )
    expect(await refused).toEqual([])
    expect((await status()).failedByKind).toEqual([["OperationRefused", 1]])
    expect((await mock.counters()).dataRequests).toBe(0)
  })
})
