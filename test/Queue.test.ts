/**
 * effect-clinical/bullmq in one process, on a real redis-server with real BullMQ, against the mock
 * served over loopback: what Redis holds (sealed persons, never one in the clear), what the
 * workers send and hand their sink, and how each kind of failure maps onto BullMQ. The fleet of
 * processes (the CLI's `queue work`) is test/QueueFleet.test.ts.
 */
import { Effect, Either, Fiber, Layer, Metric, Redacted } from "effect"
import { ClinicalClient, type ClinicalConfig, ClinicalError, PersonData, TokenStore } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { Redis } from "ioredis"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { settingsOf } from "../src/internal/queue/queueSettings.js"
import { recordOutcome } from "../src/internal/queue/runStore.js"
import { expectNone } from "./support/Leaks.js"
import * as QueueEvents from "./support/QueueEvents.js"
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

/**
 * Runs `workers` Effect workers until `done` says so (or `stop` settles), each with its own client;
 * the sink's records. Every worker is closed before it returns.
 */
const work = async (
  workers: number,
  done: (records: ReadonlyArray<ClinicalQueue.JobRecord>) => boolean,
  settings?: Partial<ClinicalConfig.Options>,
  options?: Partial<ClinicalQueue.WorkerOptions> & {
    readonly operation?: PersonData.Operation | ReadonlyArray<PersonData.Operation>
  },
  stop?: Promise<unknown>
): Promise<Array<ClinicalQueue.JobRecord>> => {
  const records: Array<ClinicalQueue.JobRecord> = []
  let finish: () => void
  const finished = new Promise<void>((resolve) => (finish = resolve))
  void stop?.then(() => finish())
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

/** Waits until `check` holds, looking every 20 ms (the test's own timeout bounds the wait). */
const eventually = async (check: () => Promise<boolean> | boolean): Promise<void> => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20))
}

const status = () => Effect.runPromise(ClinicalQueue.status(queueOptions()))

/** An enqueue of `uids` (named `inputId`) whose input fails once its first 5 persons are in Redis; its outcome. */
const diesAfterFive = async (uids: ReadonlyArray<string>, inputId: string) => {
  let fail: () => void
  const failing = new Promise<void>((resolve) => (fail = resolve))
  const dying = (async function*() {
    for (const uid of uids.slice(0, 5)) yield uid
    await failing
    throw new Error("the disk went away")
  })()
  const died = Effect.runPromise(Effect.either(
    ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications, inputId }, dying)
  ))
  await eventually(async () => (await status()).waiting === 5)
  fail!()
  return died
}

describe("enqueue", () => {
  it("seals every person: Redis holds their count, never a PersonUid, in any form; ids say nothing", async () => {
    const uids = persons.map((person) => person.personUid)
    const enqueued = await enqueue(uids)
    expect(enqueued).toEqual({ run: 1, persons: 60, added: 60, present: 0 })
    expect((await status()).waiting).toBe(60)
    const held = await everything()
    expectNone("Redis", held, uids)
    expect(held).toContain("sealed")
  })

  it("the same input again adds nothing (stable ids); with an inputId, a finished enqueue is not read again", async () => {
    const uids = persons.map((person) => person.personUid)
    expect(await enqueue(uids)).toMatchObject({ added: 60 })
    expect(await enqueue(uids)).toEqual({ run: 1, persons: 60, added: 0, present: 60 })
    // A named input is a run of its own: its jobs are its own (ids differ by run).
    expect(await enqueue(uids.slice(0, 10), { inputId: "file-a" })).toEqual({
      run: 2,
      persons: 10,
      added: 10,
      present: 0
    })
    let read = 0
    const counted = function*() {
      for (const uid of uids.slice(0, 10)) {
        read++
        yield uid
      }
    }
    expect(await enqueue([...counted()].slice(0, 0), { inputId: "file-a" })).toEqual({
      run: 2,
      persons: 10,
      added: 0,
      present: 10
    })
    read = 0
    expect(await enqueue(counted(), { inputId: "file-a" })).toMatchObject({ added: 0 })
    expect(read).toBe(0)
    expect((await status()).waiting).toBe(70)
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
    expect(await enqueuing).toEqual({ run: 1, persons: 30, added: 30, present: 0 })
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

  it.each([
    ["operation", { operation: { name: 7 } }, "must be a PersonData operation"],
    ["attempts", { attempts: 0 }, "must be a whole number from 1 to 100"],
    ["attempts", { attempts: 101 }, "must be a whole number from 1 to 100"],
    ["backoff", { backoff: "soon" }, "must be a duration"],
    ["fleetConcurrency", { fleetConcurrency: 0 }, "must be a whole number, 1 or more"],
    ["ratePerSecond", { ratePerSecond: 1.5 }, "must be a whole number, 1 or more"],
    ["maxWaiting", { maxWaiting: -1 }, "must be a whole number, 1 or more"],
    ["inputId", { inputId: "" }, "must be a non-empty string"],
    ["inputId", { inputId: 42 }, "must be a non-empty string"],
    ["onWaiting", { onWaiting: "log" }, "must be a function"]
  ])("enqueue refuses %s %j before Redis sees anything: InvalidConfig naming it", async (setting, bad, reason) => {
    const refused = await Effect.runPromise(Effect.flip(
      ClinicalQueue.enqueue(
        { ...queueOptions(), operation: PersonData.medications, ...(bad as Partial<ClinicalQueue.EnqueueOptions>) },
        [persons[0]!.personUid]
      )
    ))
    expect(refused).toMatchObject({ _tag: "InvalidConfig", setting, reason })
    expect(await RedisServer.contents(redis.port)).toBe("")
  })

  it("enqueue takes every setting at its bound: 100 attempts, a backoff, a fleet concurrency, a rate, a bound on waiting", async () => {
    const enqueued = await enqueue([persons[0]!.personUid], {
      attempts: 100,
      backoff: "2 seconds",
      fleetConcurrency: 1_000_000,
      ratePerSecond: 1_000_000,
      maxWaiting: 1,
      inputId: "input-1",
      onWaiting: () => {}
    })
    expect(enqueued).toMatchObject({ added: 1 })
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

describe("a sink or a call that misbehaves", () => {
  /** A Promise worker over the mock whose sink is `sink`; what onError was told. */
  const promiseWorker = async (sink: ClinicalQueue.Sink, options?: Partial<ClinicalQueue.WorkerOptions>) => {
    const told: Array<string> = []
    const client = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
    const running = await ClinicalQueue.createWorker(client, {
      ...queueOptions(),
      operation: PersonData.medications,
      onError: (error) => told.push(error.message),
      sink,
      ...options
    })
    return {
      told,
      close: async () => {
        await running.close()
        await client.close()
      }
    }
  }

  it("throws an object whose message getter throws, or one without a prototype: BullMQ keeps a fixed text, onError hears", async () => {
    const uid = persons[0]!.personUid
    await enqueue([uid, persons[1]!.personUid], { attempts: 1 })
    let n = 0
    const { close, told } = await promiseWorker(() => {
      if (n++ === 0) {
        throw Object.defineProperty({}, "message", {
          get: () => {
            throw new Error(`cannot read the row of ${uid}`)
          }
        })
      }
      throw Object.assign(Object.create(null), { detail: `duplicate ${uid}` })
    })
    await eventually(async () => (await status()).failed === 2)
    await close()
    expect((await status()).failedByKind).toEqual([["SinkFailed", 2]])
    expect(told).toHaveLength(2)
    expect(told.join("\n")).toContain("SinkFailed")
    expectNone("Redis", await everything(), [uid])
    expectNone("onError", told.join("\n"), [uid])
  })

  it("a sink that does not return within sinkTimeout fails that attempt; BullMQ's next one delivers", async () => {
    await enqueue([persons[0]!.personUid])
    const delivered: Array<number> = []
    let calls = 0
    const { close, told } = await promiseWorker(async (record) => {
      // The first call hangs for good (a database that stopped answering).
      if (calls++ === 0) return new Promise<void>(() => {})
      delivered.push(record.index)
    }, { sinkTimeout: "200 millis" })
    await eventually(() => delivered.length === 1)
    await close()
    expect(delivered).toEqual([0])
    expect(told.join("\n")).toContain("the sink did not finish within 200 ms")
  })

  it("a worker closed while its sink hangs renews nothing: another worker takes the person at once", async () => {
    await enqueue([persons[0]!.personUid])
    let hung = false
    const first = await promiseWorker(() => {
      hung = true
      return new Promise<void>(() => {})
    }, { closeTimeout: "200 millis", sinkTimeout: "1 hour", lockDuration: "2 seconds", stalledInterval: "1 second" })
    await eventually(() => hung)
    await first.close()
    const taken: Array<number> = []
    const second = await promiseWorker((record) => {
      taken.push(record.index)
    }, { lockDuration: "2 seconds", stalledInterval: "1 second" })
    // Within the test's timeout: the closed worker would otherwise hold the lock for as long as it lives.
    await eventually(() => taken.length === 1)
    await second.close()
    expect(taken).toEqual([0])
  })

  it("a failure's text that names the person (a PersonData layer of the application's own) is scrubbed before BullMQ keeps it", async () => {
    const uid = persons[0]!.personUid
    await enqueue([uid], { attempts: 1 })
    const echoing = Layer.succeed(PersonData.PersonData, {
      get: (operation: PersonData.Operation) =>
        Effect.fail(
          new ClinicalError.ApiError({
            operation: operation.name,
            status: 200,
            errorType: "NotFound",
            errorMessage: `no person ${uid}`
          })
        )
    } as unknown as PersonData.Service)
    const records: Array<ClinicalQueue.JobRecord> = []
    let finish: () => void
    const finished = new Promise<void>((resolve) => (finish = resolve))
    await Effect.runPromise(
      Effect.scoped(Effect.zipRight(
        ClinicalQueue.worker({
          ...queueOptions(),
          operation: PersonData.medications,
          sink: (record) => {
            records.push(record)
            finish()
          }
        }),
        Effect.promise(() => finished)
      )).pipe(Effect.provide(echoing))
    )
    await eventually(async () => (await status()).failed === 1)
    expect(records).toMatchObject([{ outcome: "Failure", error: { _tag: "ApiError" } }])
    const held = await everything()
    expect(held).toContain("no person <redacted>")
    expectNone("Redis", held, [uid])
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

describe("runs: nothing read twice, counts exact", () => {
  it("enqueue without an inputId: persons already done are not added again", async () => {
    const uids = persons.slice(0, 10).map((person) => person.personUid)
    await enqueue(uids)
    await work(1, (done) => done.length >= 10)
    await eventually(async () => (await status()).run?.done === 10)
    expect(await enqueue(uids)).toEqual({ run: 1, persons: 10, added: 0, present: 10 })
    expect((await status()).waiting).toBe(0)
    // A longer list of the same run: only the new persons are added.
    const more = persons.slice(0, 12).map((person) => person.personUid)
    expect(await enqueue(more)).toEqual({ run: 1, persons: 12, added: 2, present: 10 })
    // Another person at a position done before is another job.
    const changed = [persons[20]!.personUid, ...uids.slice(1)]
    expect(await enqueue(changed)).toMatchObject({ added: 1 })
  })

  it("the unnamed run counts persons, wherever each list put them: two lists read, counted 8 of 8, the first again adds nobody", async () => {
    const first = persons.slice(0, 5).map((person) => person.personUid)
    const second = persons.slice(30, 33).map((person) => person.personUid)
    await enqueue(first)
    await work(1, (done) => done.length >= 5)
    await enqueue(second)
    await work(1, (done) => done.length >= 3)
    await eventually(async () => (await status()).run?.done === 8)
    expect((await status()).run).toMatchObject({ named: false, persons: 8, done: 8, failed: 0 })
    expect(await enqueue(first)).toMatchObject({ added: 0, present: 5 })
    // The same person twice in one list, or at another position: one job.
    expect(await enqueue([second[0]!, first[0]!, second[0]!])).toMatchObject({ added: 0 })
    expect((await mock.counters()).medicationRequests).toBe(8)
  })

  it("again starts a new run: everyone is read again, and its counts are its own", async () => {
    const uids = persons.slice(0, 6).map((person) => person.personUid)
    expect(await enqueue(uids, { inputId: "nightly" })).toMatchObject({ run: 1, added: 6 })
    await work(1, (done) => done.length >= 6)
    await eventually(async () => (await status()).run?.done === 6)
    expect(await enqueue(uids, { inputId: "nightly" })).toMatchObject({ run: 1, added: 0 })
    expect(await enqueue(uids, { inputId: "nightly", again: true })).toMatchObject({ run: 2, added: 6 })
    expect((await status()).run).toEqual({
      run: 2,
      id: expect.stringMatching(/^[0-9a-f]{16}$/),
      named: true,
      operation: "medications",
      persons: 6,
      enqueued: true,
      done: 0,
      failed: 0
    })
    await work(1, (done) => done.length >= 6)
    await eventually(async () => (await status()).run?.done === 6)
    expect((await status()).run).toMatchObject({ run: 2, done: 6, failed: 0 })
    expect((await Effect.runPromise(ClinicalQueue.status(queueOptions(), { run: 1 }))).run).toMatchObject({
      run: 1,
      done: 6
    })
  })

  it("an outcome recorded twice (a person delivered again) counts once; a success is never undone", async () => {
    await enqueue([persons[0]!.personUid, persons[1]!.personUid], { inputId: "list" })
    const settings = Either.getOrThrow(settingsOf(queueOptions()))
    const runId = (await status()).run!.id
    const ids = (await connect().keys("bull:test:*")).map((key) => key.split(":")[2]!).filter((id) =>
      /^[0-9a-f]{32}$/.test(id)
    )
    const person = Buffer.alloc(8)
    const [first, second] = ids.map((id, index) => ({ id, index, person }))
    await recordOutcome(settings, 1, runId, first!, "D")
    await recordOutcome(settings, 1, runId, first!, "D")
    await recordOutcome(settings, 1, runId, first!, "F")
    await recordOutcome(settings, 1, runId, second!, "F")
    await recordOutcome(settings, 1, runId, second!, "F")
    expect((await status()).run).toMatchObject({ persons: 2, done: 1, failed: 1 })
    await recordOutcome(settings, 1, runId, second!, "D")
    expect((await status()).run).toMatchObject({ done: 2, failed: 0 })
    // Another job at a position replaces the first's count.
    await recordOutcome(settings, 1, runId, { ...second!, id: "f".repeat(32) }, "F")
    expect((await status()).run).toMatchObject({ done: 1, failed: 1 })
    // Another run under the same number (its records lost and started over), or none: left alone.
    await recordOutcome(settings, 1, "fedcba9876543210", first!, "F")
    await recordOutcome(settings, 9, runId, first!, "D")
    expect((await status()).run).toMatchObject({ done: 1, failed: 1 })
    expect(await connect().exists("bull:test:effect-clinical:run:9:slots")).toBe(0)
  })

  it("a failure retried into a success moves from one count to the other", async () => {
    const unknown = "UnKnownPersonUid0000000000000000000=="
    await enqueue([persons[0]!.personUid, unknown], { attempts: 1 })
    const records = await work(1, (done) => done.length >= 2)
    expect(records).toHaveLength(2)
    await eventually(async () => (await status()).failed === 1)
    expect((await status()).run).toMatchObject({ persons: 2, done: 1, failed: 1 })
    // The unknown person becomes known (another service), and is retried.
    const knowing = await MockClinicalServer.start({
      persons: [...persons, { ...MockClinicalServer.fixturePersons[0]!, personUid: unknown }]
    })
    try {
      expect(await Effect.runPromise(ClinicalQueue.retryFailed(queueOptions()))).toBe(1)
      await work(1, (done) => done.length >= 1, { baseUrl: knowing.url, applicationId: knowing.applicationId })
      await eventually(async () => (await status()).run?.done === 2)
      expect((await status()).run).toMatchObject({ persons: 2, done: 2, failed: 0 })
    } finally {
      await knowing.close()
    }
  })

  it("retryFailed while workers fail the jobs again: each failed job is put back once", async () => {
    const unknown = Array.from(
      { length: 40 },
      (_, i) => `UnKnownPersonUid${String(i).padStart(4, "0")}000000000000000==`
    )
    await enqueue(unknown, { attempts: 1 })
    await work(1, (done) => done.length >= 40)
    await eventually(async () => (await status()).failed === 40)
    await mock.resetCounters()
    // A worker fails each person again as soon as it is put back, while retryFailed runs.
    let again = 0
    const failing = work(1, () => ++again >= 40, undefined, { concurrency: 16 })
    expect(await Effect.runPromise(ClinicalQueue.retryFailed(queueOptions()))).toBe(40)
    await failing
    await eventually(async () => (await status()).failed === 40)
    expect((await mock.counters()).medicationRequests).toBe(40)
  })
})

describe("the enqueue", () => {
  /** An input that yields `first` persons, then waits until `release` is called, then the rest. */
  const stalled = (uids: ReadonlyArray<string>, first: number) => {
    let release: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let taken = 0
    const input = (async function*() {
      for (const [i, uid] of uids.entries()) {
        if (i === first) await released
        taken++
        yield uid
      }
    })()
    return { input, release: () => release(), taken: () => taken }
  }

  it("persons taken from a slow input reach Redis within about a second, not when a chunk fills", async () => {
    const uids = persons.slice(0, 5).map((person) => person.personUid)
    const slow = stalled(uids, 3)
    const enqueuing = Effect.runPromise(
      ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, slow.input)
    )
    await eventually(async () => (await status()).waiting === 3)
    expect((await status()).run).toMatchObject({ persons: 3, enqueued: false })
    slow.release()
    expect(await enqueuing).toMatchObject({ persons: 5, added: 5 })
  })

  it("its lock is renewed while the input is slow; a second enqueue stays refused", async () => {
    const slow = stalled(persons.slice(0, 4).map((person) => person.personUid), 2)
    const enqueuing = Effect.runPromise(
      ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, slow.input)
    )
    const admin = connect()
    await eventually(async () => (await admin.exists("bull:test:effect-clinical:enqueuing")) === 1)
    // As if most of its minute had passed: 2.5 s left. A live enqueue renews it within that.
    await admin.pexpire("bull:test:effect-clinical:enqueuing", 2_500)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(await admin.pttl("bull:test:effect-clinical:enqueuing")).toBeGreaterThan(30_000)
    const second = await Effect.runPromise(
      Effect.either(ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, ["x"]))
    )
    expect(Either.getLeft(second).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "QueueError",
      message: expect.stringContaining("another enqueue into this queue is running")
    })
    slow.release()
    expect(await enqueuing).toMatchObject({ added: 4 })
    expect(await admin.exists("bull:test:effect-clinical:enqueuing")).toBe(0)
  })

  it("a lock lost to another enqueue stops this one, which leaves the other's lock alone", async () => {
    const slow = stalled(persons.slice(0, 4).map((person) => person.personUid), 2)
    const enqueuing = Effect.runPromise(
      Effect.either(ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, slow.input))
    )
    const admin = connect()
    await eventually(async () => (await admin.exists("bull:test:effect-clinical:enqueuing")) === 1)
    // It lapsed, and another enqueue took it.
    await admin.set("bull:test:effect-clinical:enqueuing", "another-owner", "PX", 60_000)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    slow.release()
    const outcome = await enqueuing
    expect(Either.getLeft(outcome).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "QueueError",
      message: expect.stringContaining("the enqueue lock was lost")
    })
    expect(await admin.get("bull:test:effect-clinical:enqueuing")).toBe("another-owner")
  })

  it("interrupted, it stops and gives its lock back at once", async () => {
    const slow = stalled(persons.slice(0, 4).map((person) => person.personUid), 2)
    const fiber = Effect.runFork(
      ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, slow.input)
    )
    const admin = connect()
    await eventually(async () => (await status()).waiting === 2)
    await Effect.runPromise(Fiber.interrupt(fiber))
    expect(await admin.exists("bull:test:effect-clinical:enqueuing")).toBe(0)
    expect(slow.taken()).toBe(2)
  })

  it("a resumed named enqueue goes on from the last person recorded: none skipped, none read twice", async () => {
    const uids = persons.slice(0, 8).map((person) => person.personUid)
    expect(Either.isLeft(await diesAfterFive(uids, "file"))).toBe(true)
    expect((await status()).run).toMatchObject({ persons: 5, enqueued: false })
    expect(await enqueue(uids, { inputId: "file" })).toEqual({ run: 1, persons: 8, added: 3, present: 5 })
    const records = await work(1, (done) => done.length >= 8)
    expect(records.map((record) => record.index).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
    expect((await mock.counters()).medicationRequests).toBe(8)
  })

  it("forged records (no key) are not trusted: an enqueue reads its input again and adds nothing twice", async () => {
    const uids = persons.slice(0, 6).map((person) => person.personUid)
    expect(await enqueue(uids, { inputId: "file" })).toMatchObject({ run: 1, added: 6 })
    const admin = connect()
    for (const key of await admin.keys("bull:test:effect-clinical:*")) {
      if (/:(input:[0-9a-f]+|run:\d+)$/.test(key)) {
        await admin.set(key, JSON.stringify({ persons: 1e18, done: true, finished: true, run: 1, named: true }))
      }
    }
    await admin.hset("bull:test:effect-clinical", "run", JSON.stringify(1))
    const again = await enqueue(uids, { inputId: "file" })
    expect(again.persons).toBe(6)
    expect(again.present + again.added).toBe(6)
    expect(typeof again.run).toBe("number")
    // A forged count reads as a count, or as none: never as text.
    await admin.hset(`bull:test:effect-clinical:run:${again.run}:count`, "done", "x", "failed", "1e400")
    expect((await status()).run).toMatchObject({ done: 0, failed: 0 })
  })

  it("maxWaiting into a paused queue stops, saying why; while it waits for room, onWaiting is told", async () => {
    const uids = persons.slice(0, 8).map((person) => person.personUid)
    await enqueue(uids.slice(0, 4))
    const queue = connect()
    await queue.hset("bull:test:effect-clinical", "pausedBecause", "the token endpoint refused the ApplicationId")
    const bull = new (await import("bullmq")).Queue("test", { connection: queue })
    await bull.pause()
    const told: Array<number> = []
    const refused = await Effect.runPromise(Effect.either(ClinicalQueue.enqueue({
      ...queueOptions(),
      operation: PersonData.medications,
      maxWaiting: 4,
      onWaiting: (waiting) => told.push(waiting)
    }, uids)))
    expect(Either.getLeft(refused).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "QueueError",
      message: expect.stringMatching(
        /the queue is paused \(the token endpoint refused the ApplicationId\).*maxWaiting is 4/
      )
    })
    expect(await queue.exists("bull:test:effect-clinical:enqueuing")).toBe(0)
    await bull.resume()
    const waiting = Effect.runPromise(ClinicalQueue.enqueue({
      ...queueOptions(),
      operation: PersonData.medications,
      maxWaiting: 4,
      onWaiting: (count) => told.push(count)
    }, uids))
    await eventually(() => told.length > 0)
    expect(told[0]).toBe(4)
    await work(1, (done) => done.length >= 8)
    expect(await waiting).toMatchObject({ persons: 8, added: 4 })
    await bull.close()
  })
})

describe("runs whose records someone else rewrote, or that many later runs followed (from review)", () => {
  it("a queue record deleted mid-input: another input never gets the run, and the first goes on where it stopped", async () => {
    const a = persons.slice(0, 8).map((person) => person.personUid)
    await diesAfterFive(a, "A")
    // Whoever can write Redis removes the queue's own record (its run counter with it).
    await connect().del("bull:test:effect-clinical")
    const b = await enqueue(persons.slice(40, 43).map((person) => person.personUid), { inputId: "B" })
    expect(b.run).not.toBe(1)
    expect(await enqueue(a, { inputId: "A" })).toEqual({ run: 1, persons: 8, added: 3, present: 5 })
    const records = await work(1, (done) => done.length >= 11)
    expect(records.filter((record) => record.run === 1).map((record) => record.index).sort()).toEqual([
      0,
      1,
      2,
      3,
      4,
      5,
      6,
      7
    ])
  })

  it("a run still at work is kept whole, however many runs come after it: enqueued again, it adds nobody", async () => {
    for (const [name, from] of [["A", 0], ["B", 10], ["C", 20], ["D", 30]] as const) {
      await enqueue(persons.slice(from, from + 5).map((person) => person.personUid), { inputId: name })
    }
    expect(await enqueue(persons.slice(0, 5).map((person) => person.personUid), { inputId: "A" })).toEqual({
      run: 1,
      persons: 5,
      added: 0,
      present: 5
    })
    await work(1, (done) => done.length >= 20)
    const first = await Effect.runPromise(ClinicalQueue.status(queueOptions(), { run: 1 }))
    expect(first.run).toMatchObject({ persons: 5, done: 5 })
  })

  it("a complete run three runs back has its slots removed, its counts kept; its late outcomes change nothing", async () => {
    await enqueue(persons.slice(0, 3).map((person) => person.personUid), { inputId: "A" })
    await work(1, (done) => done.length >= 3)
    await eventually(async () => (await status()).run?.done === 3)
    for (const [name, from] of [["B", 10], ["C", 20], ["D", 30]] as const) {
      await enqueue(persons.slice(from, from + 2).map((person) => person.personUid), { inputId: name })
    }
    const admin = connect()
    expect(await admin.exists("bull:test:effect-clinical:run:1:slots")).toBe(0)
    expect((await Effect.runPromise(ClinicalQueue.status(queueOptions(), { run: 1 }))).run).toMatchObject({
      persons: 3,
      done: 3,
      enqueued: true
    })
    // Enqueued again, the finished input adds nobody.
    expect(await enqueue(persons.slice(0, 3).map((person) => person.personUid), { inputId: "A" })).toMatchObject({
      run: 1,
      added: 0
    })
  })

  it("a tag of characters longer in bytes than hex digits in the queue's record: read as none, status works", async () => {
    await enqueue([persons[0]!.personUid])
    await connect().hset("bull:test:effect-clinical", "operation", "é".repeat(32) + ".1", "run", "é".repeat(32) + ".1")
    const after = await status()
    expect(after.operation).toBeUndefined()
    expect(after.run).toBeUndefined()
    expect(after.waiting).toBe(1)
  })
})

describe("the enqueue's end (from review)", () => {
  it("a chunk that cannot be added while the input stalls: the enqueue fails at once, its lock given back", async () => {
    await enqueue(persons.slice(0, 2).map((person) => person.personUid))
    const admin = connect()
    const bull = new (await import("bullmq")).Queue("test", { connection: admin })
    await bull.pause()
    // One person, then an input that never yields again.
    const stalled = (async function*() {
      yield persons[10]!.personUid
      await new Promise(() => {})
    })()
    const outcome = await Effect.runPromise(Effect.either(ClinicalQueue.enqueue({
      ...queueOptions(),
      operation: PersonData.medications,
      maxWaiting: 2,
      again: true
    }, stalled)))
    // Paused by hand: no reason recorded, none made up.
    expect(Either.getLeft(outcome).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "QueueError",
      message: expect.stringMatching(
        /^queue enqueue failed: the queue is paused: its \d+ waiting jobs do not move until it is resumed, and maxWaiting is 2$/
      )
    })
    expect(await admin.exists("bull:test:effect-clinical:enqueuing")).toBe(0)
    await bull.close()
  })

  it("interrupted while its input stalls: the lock is given back and renewed no more", async () => {
    const stalled = (async function*() {
      yield persons[0]!.personUid
      await new Promise(() => {})
    })()
    const fiber = Effect.runFork(
      ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, stalled)
    )
    await eventually(async () => (await status()).waiting === 1)
    await Effect.runPromise(Fiber.interrupt(fiber))
    const admin = connect()
    expect(await admin.exists("bull:test:effect-clinical:enqueuing")).toBe(0)
    // Another enqueue takes the lock; the interrupted one must not renew it (nor touch it) again.
    await admin.set("bull:test:effect-clinical:enqueuing", "another", "PX", 5_000)
    const monitor = connect()
    const seen: Array<string> = []
    const feed = await monitor.monitor()
    feed.on("monitor", (_time: string, args: Array<string>) => seen.push(args.join(" ")))
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    feed.disconnect()
    expect(seen.filter((command) => /enqueuing/.test(command))).toEqual([])
  })
})

describe("retryFailed (from review)", () => {
  it("two at once put every failed job back, each once, and leave none failed", async () => {
    const unknown = Array.from(
      { length: 300 },
      (_, i) => `UnKnownPersonUid${String(i).padStart(4, "0")}111111111111111==`
    )
    await enqueue(unknown, { attempts: 1 })
    await work(1, (done) => done.length >= 300, undefined, { concurrency: 32 })
    await eventually(async () => (await status()).failed === 300)
    const [one, two] = await Promise.all([
      Effect.runPromise(ClinicalQueue.retryFailed(queueOptions())),
      Effect.runPromise(ClinicalQueue.retryFailed(queueOptions()))
    ])
    expect(one + two).toBe(300)
    expect((await status()).failed).toBe(0)
    expect((await status()).waiting).toBe(300)
    // About 1.2 s alone, over 2 s beside a busy suite: vitest's default 5 s was too close a ceiling.
  }, 30_000)
})
