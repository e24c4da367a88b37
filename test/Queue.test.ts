/**
 * effect-clinical/bullmq in one process, on a real redis-server with real BullMQ, against the mock
 * served over loopback: what Redis holds (sealed persons, never one in the clear), what the
 * workers send and hand their sink, and how each kind of failure maps onto BullMQ. The fleet of
 * processes (the CLI's `queue work`) is test/QueueFleet.test.ts.
 */
import { Effect, Either, Layer, Metric, Redacted } from "effect"
import { ClinicalClient, type ClinicalConfig, PersonData, TokenStore } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { Redis } from "ioredis"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { expectNone } from "./support/Leaks.js"
import * as RedisServer from "./support/RedisServer.js"

const KEY = "q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4="
const OTHER_KEY = "Zx8c7v6b5n4m3a2s1d0fGhJkLqWeRtYuIoPaSdFgHjK="

let redis: RedisServer.RedisServer
let mock: MockClinicalServer.Started
const connections: Array<Redis> = []

/** Persons the mock knows: the fixture's three, under new PersonUids. */
const people = (n: number): Array<MockClinicalServer.MockPerson> =>
  Array.from({ length: n }, (_, i) => ({
    ...MockClinicalServer.fixturePersons[i % 3]!,
    personUid: `QpU${i.toString(36).padStart(5, "0")}Zk9wXy${(i * 7919).toString(36)}mN==`
  }))
/** The last one's service echoes the person's own PersonUid inside an item. */
const persons = people(60).map((person, i) =>
  i === 59
    ? { ...person, medications: [{ ...person.medications[0]!, Name: `Echo of ${person.personUid}` }] }
    : person
)

beforeAll(async () => {
  redis = await RedisServer.start()
  mock = await MockClinicalServer.start({ persons })
})
afterAll(async () => {
  await mock?.close()
  await redis?.stop()
})
afterEach(async () => {
  for (const connection of connections.splice(0)) connection.disconnect()
  await RedisServer.flushAll(redis.port)
  await mock.clearFaults()
  await mock.resetCounters()
})

const connect = (): Redis => {
  const connection = new Redis(redis.port, "127.0.0.1", { maxRetriesPerRequest: null })
  connection.on("error", () => {})
  connections.push(connection)
  return connection
}

const queueOptions = (key: string = KEY) => ({ connection: connect(), name: "test", sealingKey: key })

const enqueue = (uids: Iterable<string>, options?: Partial<ClinicalQueue.EnqueueOptions>) =>
  Effect.runPromise(
    ClinicalQueue.enqueue(
      { ...queueOptions(), operation: PersonData.medications, backoff: "10 millis", ...options },
      uids
    )
  )

const everything = () => RedisServer.contents(redis.port)

/** A worker's client over the mock, the token shared through this Redis. */
const clientLayer = (settings?: Partial<ClinicalConfig.Options>) =>
  ClinicalClient.layerUndici({
    baseUrl: mock.url,
    applicationId: mock.applicationId,
    retryRateLimited: false,
    retryBaseDelay: "10 millis",
    ...settings
  }).pipe(
    Layer.provide(TokenStore.layerRedis({ redis: TokenStore.ioredis(connect()), sealingKey: KEY }))
  )

/** Runs `workers` Effect workers until `done` says so, each with its own client; the sink's records. */
const work = async (
  workers: number,
  done: (records: ReadonlyArray<ClinicalQueue.JobRecord>) => boolean,
  settings?: Partial<ClinicalConfig.Options>,
  options?: Partial<ClinicalQueue.WorkerOptions>
): Promise<Array<ClinicalQueue.JobRecord>> => {
  const records: Array<ClinicalQueue.JobRecord> = []
  let finish: () => void
  const finished = new Promise<void>((resolve) => (finish = resolve))
  const sink = (record: ClinicalQueue.JobRecord) => {
    records.push(record)
    if (done(records)) finish()
  }
  const one = Effect.scoped(
    Effect.zipRight(
      ClinicalQueue.worker({ ...queueOptions(), operation: PersonData.medications, sink, concurrency: 4, ...options }),
      Effect.promise(() => finished)
    )
  ).pipe(Effect.provide(clientLayer(settings)))
  await Effect.runPromise(Effect.all(Array.from({ length: workers }, () => one), { concurrency: "unbounded" }))
  return records
}

const status = () => Effect.runPromise(ClinicalQueue.status(queueOptions()))

describe("enqueue", () => {
  it("seals every person: Redis holds their count, never a PersonUid, in any form; ids say nothing", async () => {
    const uids = persons.map((person) => person.personUid)
    const enqueued = await enqueue(uids)
    expect(enqueued).toEqual({ persons: 60, added: 60, present: 0 })
    expect((await status()).waiting).toBe(60)
    const held = await everything()
    expectNone("Redis", held, uids)
    expect(held).toContain("sealed")
  })

  it("the same input again adds nothing (stable ids); with an inputId, a finished enqueue is not read again", async () => {
    const uids = persons.map((person) => person.personUid)
    expect(await enqueue(uids)).toMatchObject({ added: 60 })
    expect(await enqueue(uids)).toEqual({ persons: 60, added: 0, present: 60 })
    expect(await enqueue(uids.slice(0, 10), { inputId: "file-a" })).toEqual({ persons: 10, added: 0, present: 10 })
    let read = 0
    const counted = function*() {
      for (const uid of uids.slice(0, 10)) {
        read++
        yield uid
      }
    }
    expect(await enqueue([...counted()].slice(0, 0), { inputId: "file-a" })).toEqual({
      persons: 10,
      added: 0,
      present: 10
    })
    read = 0
    expect(await enqueue(counted(), { inputId: "file-a" })).toMatchObject({ added: 0 })
    expect(read).toBe(0)
    expect((await status()).waiting).toBe(60)
  })

  it("maxWaiting: enqueueing waits while that many jobs wait, and goes on as the workers take them", async () => {
    const uids = persons.slice(0, 30).map((person) => person.personUid)
    let finished = false
    const enqueuing = enqueue(uids, { maxWaiting: 10 }).then((enqueued) => {
      finished = true
      return enqueued
    })
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(finished).toBe(false)
    expect((await status()).waiting).toBe(10)
    const records = await work(1, (done) => done.length >= 30)
    expect(await enqueuing).toEqual({ persons: 30, added: 30, present: 0 })
    expect(new Set(records.map((record) => record.index)).size).toBe(30)
  })

  it("one enqueue into a queue at a time: a second is refused while the first runs", async () => {
    const uids = persons.slice(0, 10).map((person) => person.personUid)
    const first = enqueue(uids, { maxWaiting: 5 })
    while ((await status()).waiting < 5) await new Promise((resolve) => setTimeout(resolve, 20))
    const second = await Effect.runPromise(
      Effect.either(ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, ["x"]))
    )
    expect(Either.getLeft(second).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "QueueError",
      message: expect.stringContaining("another enqueue into this queue is running")
    })
    await work(1, (done) => done.length >= 10)
    expect(await first).toMatchObject({ added: 10 })
  })

  it("a date range: checked at enqueue; each job carries its own, so enqueues of different ranges share a queue", async () => {
    const bad = await Effect.runPromise(Effect.either(
      ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications, startDate: "2024-02-30" }, ["a"])
    ))
    expect(Either.getLeft(bad).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "InvalidConfig",
      setting: "startDate"
    })
    const [first, second] = [persons[0]!.personUid, persons[1]!.personUid]
    await enqueue([first], { startDate: "2020-01-01", endDate: "2020-12-31" })
    expect(await enqueue([second], { startDate: "2024-01-01" })).toMatchObject({ added: 1 })
    // The same person at the same position with another range is another job.
    expect(await enqueue([first], { startDate: "2021-01-01" })).toMatchObject({ added: 1 })
    await work(1, (done) => done.length >= 3)
    const bodies = (await mock.requestLog()).filter((entry) => entry.operation === "medications")
      .map((entry) => JSON.parse(entry.body!) as Record<string, unknown>)
    const rangeOf = (uid: string) =>
      bodies.filter((body) => body.personuid === uid).map(({ EndDate, StartDate }) => ({ StartDate, EndDate }))
    expect(rangeOf(first)).toEqual(expect.arrayContaining([
      { StartDate: "2020-01-01", EndDate: "2020-12-31" },
      { StartDate: "2021-01-01", EndDate: undefined }
    ]))
    expect(rangeOf(second)).toEqual([{ StartDate: "2024-01-01", EndDate: undefined }])
  })

  it("a queue of one operation refuses another's jobs, and another sealing key", async () => {
    await enqueue(["a"])
    const other = await Effect.runPromise(
      Effect.either(ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.ethnicities }, ["b"]))
    )
    expect(Either.getLeft(other).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "InvalidConfig",
      setting: "operation"
    })
    const wrongKey = await Effect.runPromise(
      Effect.either(ClinicalQueue.enqueue({ ...queueOptions(OTHER_KEY), operation: PersonData.medications }, ["b"]))
    )
    expect(Either.getLeft(wrongKey).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "InvalidConfig",
      setting: "sealingKey"
    })
  })

  it("a missing or weak sealing key is refused before Redis is touched", async () => {
    for (const key of [undefined, "short", "a".repeat(64)]) {
      const outcome = await Effect.runPromise(
        Effect.either(
          ClinicalQueue.enqueue(
            { ...queueOptions(), sealingKey: key, operation: PersonData.medications },
            ["a"]
          )
        )
      )
      expect(Either.getLeft(outcome).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
        _tag: "InvalidConfig",
        setting: "sealingKey"
      })
    }
    expect(await connect().dbsize()).toBe(0)
  })
})

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
    const records = await work(2, (done) => done.length >= 30, undefined, { concurrency: 1 })
    expect(records).toHaveLength(30)
    const log = (await mock.requestLog()).filter((entry) => entry.operation === "medications")
    const throttled = log.find((entry) => entry.status === 429)!
    // The other worker's request already in flight may land just after; then nothing for the pause.
    const during = log.filter((entry) => entry.at > throttled.at + 100 && entry.at < throttled.at + 1_900)
    expect(during).toEqual([])
    expect(log.filter((entry) => entry.status === 200)).toHaveLength(30)
  })

  it("a refused ApplicationId pauses the queue with the reason; resume lets it go on", async () => {
    await enqueue(persons.slice(0, 5).map((person) => person.personUid))
    const refused = work(1, (done) => done.length >= 5, { applicationId: "00000000-0000-0000-0000-000000000001" })
    let after = await status()
    for (let i = 0; i < 100 && !after.isPaused; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      after = await status()
    }
    expect(after.isPaused).toBe(true)
    expect(after.pausedBecause).toMatch(/token endpoint refused the ApplicationId/)
    expect((await mock.counters()).medicationRequests).toBe(0)
    await Effect.runPromise(ClinicalQueue.resume(queueOptions()))
    expect((await status()).pausedBecause).toBeUndefined()
    // The worker with the refused id pauses it again at once: finish with a good one.
    const good = work(1, (done) => done.length >= 5)
    await Effect.runPromise(ClinicalQueue.resume(queueOptions()))
    expect(await good).toHaveLength(5)
    void refused
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
    const ids = (await admin.keys("bull:test:*")).filter((key) => /:[0-9a-f]{32}$/.test(key))
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
    await work(2, (done) => done.length >= 25)
    const starts = (await mock.requestLog()).filter((entry) => entry.operation === "medications").map((e) => e.at)
    expect(starts).toHaveLength(25)
    expect(Math.max(...starts) - Math.min(...starts)).toBeGreaterThanOrEqual(1_900)
  })

  it("metrics: jobs by outcome and failures by kind, as the OpenTelemetry exporter reads them", async () => {
    const counted = (name: string, tag: string, value: string) =>
      Metric.unsafeSnapshot().filter((pair) =>
        pair.metricKey.name === name && pair.metricKey.tags.some((t) => t.key === tag && t.value === value)
      ).reduce((sum, pair) => sum + Number((pair.metricState as { count?: number }).count ?? 0), 0)
    const before = {
      completed: counted("clinical_queue_jobs_total", "outcome", "completed"),
      failed: counted("clinical_queue_failures_total", "kind", "ApiError PersonNotFound")
    }
    await enqueue([persons[0]!.personUid, persons[1]!.personUid, "NoSuchPerson0000000000000000=="])
    await work(1, (done) => done.length >= 3)
    expect(counted("clinical_queue_jobs_total", "outcome", "completed") - before.completed).toBe(2)
    expect(counted("clinical_queue_failures_total", "kind", "ApiError PersonNotFound") - before.failed).toBe(1)
  })

  it("close() waits for the jobs in hand up to closeTimeout, then leaves them (a hung call holds no shutdown)", async () => {
    await enqueue([persons[0]!.personUid])
    await mock.injectFaults("medications", [MockClinicalServer.Fault.delay("3 seconds")])
    const client = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
    const records: Array<ClinicalQueue.JobRecord> = []
    const running = await ClinicalQueue.createWorker(client, {
      ...queueOptions(),
      operation: PersonData.medications,
      closeTimeout: "300 millis",
      sink: (record) => {
        records.push(record)
      }
    })
    while ((await mock.counters()).medicationRequests === 0) await new Promise((resolve) => setTimeout(resolve, 20))
    await running.close()
    // Closed before the service answered: the job was left, not finished.
    expect(records).toEqual([])
    await client.close()
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
