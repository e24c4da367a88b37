/**
 * The BullMQ queue on Effect 4 (effect-clinical/bullmq): persons enqueued as sealed jobs on a real
 * redis-server (test/support/RedisServer.ts), read by the Effect 4 worker (a scoped layer over
 * `PersonData`) from the Effect 4 mock over loopback HTTP. The queue's rules are the core's, shared
 * with the Effect 3 line (whose test/Queue*.test.ts go deeper): here, that this line runs them.
 */
import { Effect, Exit, Layer, Redacted } from "effect"
import { Redis } from "ioredis"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import * as RedisServer from "../../test/support/RedisServer.js"
import * as ClinicalQueue from "../src/bullmq.js"
import * as ClinicalClient from "../src/ClinicalClient.js"
import { InvalidConfig, QueueError } from "../src/ClinicalError.js"
import * as PersonData from "../src/PersonData.js"
import { createClinicalClient } from "../src/promise.js"
import * as MockClinicalServer from "../src/testing/MockClinicalServer.js"
import { capturingTracer } from "./support/line.js"

const KEY = "q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4="
const OTHER_KEY = "Zx8c7v6b5n4m3a2s1d0fGhJkLqWeRtYuIoPaSdFgHjK="

/** Persons the mock knows: the fixture's three, under new PersonUids. */
const persons = Array.from({ length: 12 }, (_, i) => ({
  ...MockClinicalServer.fixturePersons[i % 3]!,
  personUid: `QpU${i.toString(36).padStart(5, "0")}Zk9wXy${(i * 7919).toString(36)}mN==`
}))
const uids = persons.map((person) => person.personUid)

let redis: RedisServer.RedisServer
let mock: MockClinicalServer.Started
const connections: Array<Redis> = []

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

const queueOptions = (key: string = KEY) => ({ connection: connect(), name: "test4", sealingKey: key })

/** Runs an effect, resolving with its success or its typed failure. */
const outcome = <A, E>(effect: Effect.Effect<A, E>): Promise<A | E> =>
  Effect.runPromiseExit(effect).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
    if (failure === undefined) throw new Error("not a typed failure")
    return failure.error
  })

const enqueue = (persons: Iterable<string>, options?: Partial<ClinicalQueue.EnqueueOptions>) =>
  Effect.runPromise(
    ClinicalQueue.enqueue(
      { ...queueOptions(), operation: PersonData.medications, backoff: "10 millis", ...options },
      persons
    )
  )

const status = () => Effect.runPromise(ClinicalQueue.status(queueOptions()))

/** Waits until `check` holds, looking every 20 ms (the test's own timeout bounds the wait). */
const eventually = async (check: () => Promise<boolean> | boolean): Promise<void> => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20))
}

/** The client over undici to the mock. */
const clientLayer = () =>
  ClinicalClient.layerUndici({
    baseUrl: mock.url,
    applicationId: mock.applicationId,
    retryRateLimited: false,
    retryBaseDelay: "10 millis"
  })

/** Runs the Effect 4 worker (as its layer) until `done` says so; the sink's records. */
const work = async (
  done: (records: ReadonlyArray<ClinicalQueue.JobRecord>) => boolean,
  options?: Partial<ClinicalQueue.WorkerOptions>
): Promise<Array<ClinicalQueue.JobRecord>> => {
  const records: Array<ClinicalQueue.JobRecord> = []
  let finish: () => void
  const finished = new Promise<void>((resolve) => (finish = resolve))
  const sink = (record: ClinicalQueue.JobRecord) => {
    records.push(record)
    if (done(records)) finish()
  }
  const worker = ClinicalQueue.layerWorker({
    ...queueOptions(),
    operation: PersonData.medications,
    sink,
    concurrency: 4,
    ...options
  })
  await Effect.runPromise(
    Layer.launch(worker).pipe(
      Effect.raceFirst(Effect.promise(() => finished)),
      Effect.provide(clientLayer())
    )
  )
  return records
}

/** Whether Redis holds none of `secrets`, as text or base64. */
const holdsNone = async (secrets: ReadonlyArray<string>): Promise<boolean> => {
  const held = await RedisServer.contents(redis.port)
  return secrets.every((secret) => !held.includes(secret) && !held.includes(Buffer.from(secret).toString("base64")))
}

describe("ClinicalQueue on Effect 4", () => {
  it("enqueue seals every person: Redis holds their count, never a PersonUid; the same input again adds nothing", async () => {
    expect(await enqueue(uids)).toEqual({ run: 1, persons: 12, added: 12, present: 0 })
    expect(await enqueue(uids)).toEqual({ run: 1, persons: 12, added: 0, present: 12 })
    expect((await status()).waiting).toBe(12)
    expect(await holdsNone(uids)).toBe(true)
    expect(await RedisServer.contents(redis.port)).toContain("sealed")
  })

  it("the Effect 4 worker reads each person once: results to the sink, the run's counts exact, the queue empty", async () => {
    await enqueue(uids)
    const records = await work((done) => done.length >= uids.length)
    expect(records).toHaveLength(uids.length)
    expect(new Set(records.map((record) => record.index))).toEqual(new Set(uids.keys()))
    for (const record of records) {
      expect(record).toMatchObject({ outcome: "Success", operation: "medications", run: 1 })
      // The sink sees the person's PersonUid Redacted, and the result of that person.
      expect(Redacted.value(record.personUid)).toBe(uids[record.index])
      if (record.outcome === "Success") {
        expect(record.result.items.map((item) => item.Name)).toEqual(
          persons[record.index]!.medications.map((medication) => medication.Name)
        )
      }
    }
    expect((await mock.counters()).medicationRequests).toBe(uids.length)
    await eventually(async () => (await status()).run?.done === uids.length)
    expect(await status()).toMatchObject({
      waiting: 0,
      active: 0,
      failed: 0,
      operation: "medications",
      run: { run: 1, persons: 12, done: 12, failed: 0, enqueued: false, named: false }
    })
    expect(await holdsNone(uids)).toBe(true)
  })

  it("an unknown person fails at once: its typed reason to the sink, one request, its kind counted, no PersonUid kept", async () => {
    const unknown = "UnKnownPersonUid0000000000000000000=="
    await enqueue([unknown])
    const records = await work((done) => done.length >= 1)
    expect(records).toMatchObject([{ outcome: "Failure", index: 0, error: { _tag: "ApiError" } }])
    await eventually(async () => (await status()).failed === 1)
    const after = await status()
    expect(after.failedByKind).toEqual([[expect.stringMatching(/^ApiError/), 1]])
    expect(after.run).toMatchObject({ done: 0, failed: 1 })
    expect((await mock.counters()).medicationRequests).toBe(1)
    expect(await holdsNone([unknown])).toBe(true)
  })

  it("a span per job attempt (queue, position, attempt, outcome; no PersonUid), the client's spans its children", async () => {
    const { spans, tracer } = capturingTracer()
    const unknown = "UnKnownPersonUid0000000000000000000=="
    await enqueue([uids[0]!, unknown])
    const records: Array<ClinicalQueue.JobRecord> = []
    let finish: () => void
    const finished = new Promise<void>((resolve) => (finish = resolve))
    const worker = ClinicalQueue.layerWorker({
      ...queueOptions(),
      operation: PersonData.medications,
      sink: (record) => {
        records.push(record)
        if (records.length >= 2) finish()
      }
    })
    await Effect.runPromise(
      Layer.launch(worker).pipe(
        Effect.raceFirst(Effect.promise(() => finished)),
        Effect.provide(clientLayer()),
        Effect.withTracer(tracer)
      )
    )
    const jobs = spans.filter((span) => span.name === "ClinicalQueue.job")
    const attributes = jobs.map((span) => Object.fromEntries(span.attributes))
    expect(
      attributes.map((a) => [a["clinical.queue.index"], a["clinical.queue.attempt"], a["clinical.queue.outcome"]])
        .sort()
    )
      .toEqual([[0, 1, "completed"], [1, 1, "failed"]])
    for (const a of attributes) {
      expect(a).toMatchObject({
        "messaging.system": "bullmq",
        "messaging.destination.name": "test4",
        "clinical.queue.run": 1
      })
    }
    for (const job of jobs) {
      const reads = spans.filter((span) =>
        span.name === "PersonData.medications" && span.parent._tag === "Some" && span.parent.value.spanId === job.spanId
      )
      expect(reads).toHaveLength(1)
    }
    const seen = JSON.stringify(attributes)
    expect(seen).not.toContain(uids[0])
    expect(seen).not.toContain(unknown)
  })

  it("a worker over the Effect 4 Promise client reads the persons too", async () => {
    await enqueue(uids.slice(0, 3))
    await using client = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
    const records: Array<ClinicalQueue.JobRecord> = []
    const running = await ClinicalQueue.createWorker(client, {
      ...queueOptions(),
      operation: PersonData.medications,
      sink: (record) => void records.push(record)
    })
    try {
      await eventually(() => records.length >= 3)
    } finally {
      await running.close()
    }
    expect(records.map((record) => record.outcome)).toEqual(["Success", "Success", "Success"])
  })

  it.each(
    [
      ["attempts", { attempts: 0 }, "must be a whole number from 1 to 100"],
      ["backoff", { backoff: "soon" }, "must be a duration"],
      ["startDate", { startDate: "2024-02-30" }, undefined]
    ] as const
  )("enqueue refuses %s before Redis sees anything: InvalidConfig naming it", async (setting, bad, reason) => {
    const refused = await outcome(
      ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications, ...bad } as never, uids)
    )
    expect(refused).toBeInstanceOf(InvalidConfig)
    expect(refused).toMatchObject({ setting, ...(reason === undefined ? {} : { reason }) })
    expect(await RedisServer.contents(redis.port)).not.toContain("test4")
  })

  it("the settings and the worker's options are refused as InvalidConfig, the key's value never shown", async () => {
    const noKey = await outcome(ClinicalQueue.status({ connection: connect(), sealingKey: undefined }))
    expect(noKey).toMatchObject({ _tag: "InvalidConfig", setting: "sealingKey" })
    const weak = await outcome(ClinicalQueue.status({ connection: connect(), sealingKey: "a".repeat(64) }))
    expect(weak).toMatchObject({ _tag: "InvalidConfig", setting: "sealingKey" })
    expect((weak as InvalidConfig).message).not.toContain("a".repeat(64))
    const concurrency = await outcome(
      Effect.scoped(
        ClinicalQueue.worker({ ...queueOptions(), operation: PersonData.medications, sink: () => {}, concurrency: 0 })
      )
        .pipe(Effect.provide(clientLayer()))
    )
    expect(concurrency).toMatchObject({ _tag: "InvalidConfig", setting: "concurrency" })
  })

  it("a worker with another key than the queue's is refused at start; a second enqueue at once is a QueueError", async () => {
    await enqueue(uids.slice(0, 1))
    const other = await outcome(
      Effect.scoped(
        ClinicalQueue.worker({ ...queueOptions(OTHER_KEY), operation: PersonData.medications, sink: () => {} })
      ).pipe(Effect.provide(clientLayer()))
    )
    expect(other).toBeInstanceOf(InvalidConfig)
    expect(other).toMatchObject({
      setting: "sealingKey",
      reason: expect.stringContaining("does not open the records of the queue \"test4\"")
    })
    const first = enqueue(uids, { maxWaiting: 1 })
    await eventually(async () => (await status()).enqueuing)
    const second = await outcome(
      ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, uids)
    )
    expect(second).toBeInstanceOf(QueueError)
    expect((second as QueueError).message).toBe(
      "queue enqueue failed: another enqueue into this queue is running (if it died, its lock ends within a minute)"
    )
    await work((done) => done.length >= uids.length)
    await first
  })
})

describe("a sealing key that is not the queue's (issue 50), on this line", () => {
  const refusedWith = (error: unknown) => {
    expect(error).toBeInstanceOf(InvalidConfig)
    expect(error).toMatchObject({
      setting: "sealingKey",
      reason:
        "does not open the records of the queue \"test4\": it is not the key the queue was filled with, and every process of a queue needs the same key"
    })
  }

  it("status, retryFailed and resume refuse it and change nothing", async () => {
    await enqueue(uids.slice(0, 2))
    const other = queueOptions(OTHER_KEY)
    refusedWith(await outcome(ClinicalQueue.status(other)))
    refusedWith(await outcome(ClinicalQueue.retryFailed(other)))
    refusedWith(await outcome(ClinicalQueue.resume(other)))
    expect(await status()).toMatchObject({ operation: "medications", waiting: 2, run: { run: 1, persons: 2 } })
  })

  it("a worker on an empty queue claims it; one whose key the queue no longer records puts back what it cannot open", async () => {
    const told: Array<string> = []
    let stop!: () => void
    const stopped = new Promise<void>((resolve) => (stop = resolve))
    let up!: () => void
    const isUp = new Promise<void>((resolve) => (up = resolve))
    const ended = Effect.runPromise(
      Effect.scoped(
        ClinicalQueue.worker({
          ...queueOptions(),
          operation: PersonData.medications,
          sink: () => {},
          onError: (error) => told.push(error.message)
        }).pipe(Effect.tap(() => Effect.sync(up)), Effect.andThen(Effect.promise(() => stopped)))
      ).pipe(Effect.provide(clientLayer()))
    )
    await isUp
    refusedWith(
      await outcome(ClinicalQueue.enqueue({ ...queueOptions(OTHER_KEY), operation: PersonData.medications }, uids))
    )
    await connect().del("bull:test4:effect-clinical")
    await enqueue(uids.slice(0, 3), { sealingKey: OTHER_KEY })
    await eventually(() => told.length > 0)
    expect(told[0]).toContain("does not open the records of the queue")
    stop()
    await ended
    expect((await mock.counters()).medicationRequests).toBe(0)
    const records = await work((done) => done.length === 3, { ...queueOptions(OTHER_KEY) })
    expect(records.filter((record) => record.outcome === "Success")).toHaveLength(3)
  })
})
