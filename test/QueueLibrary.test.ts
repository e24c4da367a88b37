/**
 * effect-clinical/bullmq's own wiring (src/ClinicalQueue.ts), on a real redis-server and the mock:
 * the bound on a Redis that never answers, and the operation each failure names; what enqueue makes
 * of the persons, dates and input ids it is given, and what it leaves in Redis; every field of
 * status; what retryFailed skips and leaves behind; a Redis user allowed the queue's keys alone; and
 * how a worker over a Promise client maps what the client throws. Queue.test.ts is the queue at work.
 */
import { Queue, Worker } from "bullmq"
import { Effect, Layer, Redacted } from "effect"
import { ClinicalError, PersonData } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { type Client, createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { Redis, type RedisOptions } from "ioredis"
import { createHash } from "node:crypto"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import * as FakeRedis from "./support/FakeRedis.js"
import { expectNone } from "./support/Leaks.js"
import * as RedisServer from "./support/RedisServer.js"

const KEY = "q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4="

let redis: RedisServer.RedisServer
let mock: MockClinicalServer.Started
const connections: Array<Redis> = []

/** Persons the mock knows: the fixture's three, under new PersonUids; the last echoes its PersonUid in an item. */
const persons = Array.from({ length: 4 }, (_, i) => ({
  ...MockClinicalServer.fixturePersons[i % 3]!,
  personUid: `LbU${i.toString(36).padStart(5, "0")}Qx7wZt${(i * 7919).toString(36)}mK==`
})).map((person, i) =>
  i === 3 ? { ...person, medications: [{ ...person.medications[0]!, Name: `Echo of ${person.personUid}` }] } : person
)
const uid = (i: number) => persons[i]!.personUid
const unknown = (i: number) => `UnKnownPersonUid${String(i).padStart(4, "0")}222222222222222==`

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

const connect = (port = redis.port, options: RedisOptions = {}): Redis => {
  const connection = new Redis(port, "127.0.0.1", { maxRetriesPerRequest: null, ...options })
  connection.on("error", () => {})
  connections.push(connection)
  return connection
}

const queueOptions = () => ({ connection: connect(), name: "test", sealingKey: KEY })

const enqueue = (uids: Iterable<unknown> | AsyncIterable<unknown>, options?: Partial<ClinicalQueue.EnqueueOptions>) =>
  Effect.runPromise(
    ClinicalQueue.enqueue(
      { ...queueOptions(), operation: PersonData.medications, ...options },
      uids as Iterable<string> | AsyncIterable<string>
    )
  )

const status = () => Effect.runPromise(ClinicalQueue.status(queueOptions()))
const retryFailed = () => Effect.runPromise(ClinicalQueue.retryFailed(queueOptions()))

/** Waits until `check` holds, looking every 20 ms (the test's own timeout bounds the wait). */
const eventually = async (check: () => Promise<boolean> | boolean): Promise<void> => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20))
}

/** The failure an Effect ended with. */
const failureOf = async <E>(effect: Effect.Effect<unknown, E>): Promise<E> => Effect.runPromise(Effect.flip(effect))

/**
 * A Promise worker (over the mock, or over `client`) until `done` says so; the sink's records and
 * what onError was told. Closed before it returns.
 */
const promiseWork = async (
  done: (records: ReadonlyArray<ClinicalQueue.JobRecord>) => boolean,
  options?: Partial<ClinicalQueue.WorkerOptions>,
  client?: Client
) => {
  const own = client ?? createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId, maxRetries: 0 })
  const records: Array<ClinicalQueue.JobRecord> = []
  const told: Array<string> = []
  let finish: () => void
  const finished = new Promise<void>((resolve) => (finish = resolve))
  const running = await ClinicalQueue.createWorker(own, {
    ...queueOptions(),
    operation: PersonData.medications,
    onError: (error) => told.push(error.message),
    sink: (record) => {
      records.push(record)
      if (done(records)) finish()
    },
    ...options
  })
  await finished
  await running.close()
  if (client === undefined) await own.close()
  return { records, told }
}

/** A BullMQ queue of the test's queue, as an operator (or a dashboard) reaches it. */
const bullQueue = () => new Queue("test", { connection: connect() })

describe("a Redis that never answers", () => {
  it(
    "enqueue, status, retryFailed and resume each give up after 10 s: a QueueError naming the operation",
    async () => {
      const silent = await FakeRedis.silent()
      try {
        const options = { connection: connect(silent.port), name: "test", sealingKey: KEY }
        // All four at once: one wait of the bound for the whole test.
        const failures = await Promise.all([
          failureOf(ClinicalQueue.enqueue({ ...options, operation: PersonData.medications }, [uid(0)])),
          failureOf(ClinicalQueue.status(options)),
          failureOf(ClinicalQueue.retryFailed(options)),
          failureOf(ClinicalQueue.resume(options))
        ])
        expect(failures.map((failure) => [failure._tag, failure.message])).toEqual(
          ["enqueue", "status", "retry-failed", "resume"].map((operation) => [
            "QueueError",
            `queue ${operation} failed: Redis did not answer within 10 s`
          ])
        )
      } finally {
        await silent.close()
      }
    },
    30_000
  )

  it("on a Redis that answers, status, resume and retryFailed leave no timer behind: a script that ran them can end", async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length
    const options = queueOptions()
    await Effect.runPromise(ClinicalQueue.status(options))
    const before = timers()
    for (let i = 0; i < 3; i++) {
      await Effect.runPromise(ClinicalQueue.status(options))
      await Effect.runPromise(ClinicalQueue.resume(options))
      await Effect.runPromise(ClinicalQueue.retryFailed(options))
    }
    expect(timers()).toBeLessThanOrEqual(before)
  })
})

describe("a Redis that refuses a command: the failure names the operation that met it", () => {
  it("a full Redis refuses the enqueue's lock: 'queue enqueue failed', with Redis's reason", async () => {
    const admin = connect()
    await admin.config("SET", "maxmemory", "1")
    try {
      const refused = await failureOf(
        ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, [uid(0)])
      )
      expect(refused).toMatchObject({
        _tag: "QueueError",
        operation: "enqueue",
        detail: expect.stringMatching(/^OOM /)
      })
    } finally {
      await admin.config("SET", "maxmemory", "0")
    }
  })

  it("a queue record that is not a hash (someone wrote Redis): enqueue, resume and both workers say which failed", async () => {
    await connect().set("bull:test:effect-clinical", "not a hash")
    const wrongType = (operation: string) => ({
      _tag: "QueueError",
      operation,
      message: expect.stringMatching(new RegExp(`^queue ${operation} failed: WRONGTYPE `))
    })
    expect(await failureOf(ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, [uid(0)])))
      .toMatchObject(wrongType("enqueue"))
    expect(await failureOf(ClinicalQueue.resume(queueOptions()))).toMatchObject(wrongType("resume"))
    const anyClient = Layer.succeed(PersonData.PersonData, {} as PersonData.Service)
    const effectWorker = ClinicalQueue.worker({ ...queueOptions(), operation: PersonData.medications, sink: () => {} })
    expect(await failureOf(Effect.scoped(effectWorker).pipe(Effect.provide(anyClient))))
      .toMatchObject(wrongType("work"))
    const client = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
    const promiseWorker = await ClinicalQueue.createWorker(client, {
      ...queueOptions(),
      operation: PersonData.medications,
      sink: () => {}
    }).then(() => undefined, (error: unknown) => error)
    await client.close()
    expect(promiseWorker).toMatchObject(wrongType("work"))
  })

  it("a failed set that is not a sorted set: 'queue retry-failed failed'", async () => {
    await connect().set("bull:test:failed", "not a sorted set")
    expect(await failureOf(ClinicalQueue.retryFailed(queueOptions()))).toMatchObject({
      _tag: "QueueError",
      message: expect.stringMatching(/^queue retry-failed failed: WRONGTYPE /)
    })
  })
})

describe("enqueue", () => {
  it("options without an operation are refused as InvalidConfig naming it, before Redis sees anything", async () => {
    const { operation: _, ...withoutOperation } = { ...queueOptions(), operation: PersonData.medications }
    const refused = await failureOf(
      ClinicalQueue.enqueue(withoutOperation as unknown as ClinicalQueue.EnqueueOptions, [uid(0)])
    )
    expect(refused).toMatchObject({
      _tag: "InvalidConfig",
      setting: "operation",
      reason: "must be a PersonData operation"
    })
    expect(await RedisServer.contents(redis.port)).toBe("")
  })

  it("a PersonUid is read trimmed; anything but text is an empty PersonUid, refused for that person alone", async () => {
    // A line of a file, its spaces and newline kept; a number from a parsed CSV column.
    expect(await enqueue([`  ${uid(0)}\r\n`, 42], { attempts: 1 })).toMatchObject({ added: 2 })
    // The same person, written as it should be: already in the run.
    expect(await enqueue([uid(0)])).toMatchObject({ added: 0, present: 1 })
    const { records } = await promiseWork((done) => done.length >= 2)
    const byIndex = [...records].sort((a, b) => a.index - b.index)
    expect(byIndex).toMatchObject([
      { index: 0, outcome: "Success" },
      { index: 1, outcome: "Failure", error: { _tag: "InvalidRequest", field: "personUid", reason: "is empty" } }
    ])
    expect(Redacted.value(byIndex[0]!.personUid)).toBe(uid(0))
    const sent = (await mock.requestLog()).filter((entry) => entry.operation === "medications")
      .map((entry) => (JSON.parse(entry.body!) as { personuid: string }).personuid)
    expect(sent).toEqual([uid(0)])
  })

  it("a date range of Dates: each job carries their UTC days, and the Promise worker sends them", async () => {
    await enqueue([uid(0)], {
      startDate: new Date("2020-03-01T23:30:00Z"),
      endDate: new Date("2020-12-31T00:00:00Z")
    })
    const { records } = await promiseWork((done) => done.length >= 1)
    expect(records).toMatchObject([{ outcome: "Success" }])
    const bodies = (await mock.requestLog()).filter((entry) => entry.operation === "medications")
      .map((entry) => JSON.parse(entry.body!) as Record<string, unknown>)
    expect(bodies.map(({ EndDate, StartDate }) => ({ StartDate, EndDate }))).toEqual([
      { StartDate: "2020-03-01", EndDate: "2020-12-31" }
    ])
  })

  it("an input's record is kept where every version looks for it: its id's hash, the unnamed run's apart", async () => {
    const hashOf = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 32)
    await enqueue([uid(0)])
    await enqueue([uid(1)], { inputId: "persons.csv" })
    // A named input whose id reads "undefined" is not the unnamed run.
    expect(await enqueue([uid(2)], { inputId: "undefined" })).toMatchObject({ run: 3, added: 1 })
    const inputs = (await connect().keys("bull:test:effect-clinical:input:*")).sort()
    expect(inputs).toEqual(
      [hashOf("effect-clinical: the unnamed run"), hashOf("input\npersons.csv"), hashOf("input\nundefined")]
        .map((hash) => `bull:test:effect-clinical:input:${hash}`).sort()
    )
  })

  it("completed jobs are kept whatever their age (the newest 1,000, for BullMQ's tools), a failed one a week: removed once older as others finish", async () => {
    await enqueue([uid(0), unknown(0), unknown(1)], { attempts: 1 })
    await promiseWork((done) => done.length >= 3)
    await eventually(async () => (await status()).failed === 2)
    const admin = connect()
    const jobKeys = async () => (await admin.keys("bull:test:*")).filter((key) => /^bull:test:[0-9a-f]{32}$/.test(key))
    expect(await admin.zcard("bull:test:completed")).toBe(1)
    expect(await jobKeys()).toHaveLength(3)
    // As if the completed one had finished 2 days ago, the two failed 8 and 6 days ago.
    const daysAgo = (days: number) => String(Date.now() - days * 24 * 3600 * 1000)
    const [completed] = await admin.zrange("bull:test:completed", 0, -1)
    await admin.zadd("bull:test:completed", "XX", daysAgo(2), completed!)
    const [older, newer] = await admin.zrange("bull:test:failed", 0, -1)
    await admin.zadd("bull:test:failed", "XX", daysAgo(8), older!, daysAgo(6), newer!)
    await enqueue([uid(1), unknown(2)], { attempts: 1 })
    await promiseWork((done) => done.length >= 2)
    await eventually(async () =>
      (await admin.zcard("bull:test:failed")) === 2 && (await admin.zcard("bull:test:completed")) === 2
    )
    expect(await admin.zrange("bull:test:failed", 0, 0)).toEqual([newer])
    expect(await admin.exists(`bull:test:${older}`)).toBe(0)
    // The completed one of 2 days ago is kept beside the new one: the count bounds them, not their age.
    expect(await admin.zrange("bull:test:completed", 0, -1)).toContain(completed)
    expect(await admin.exists(`bull:test:${completed}`)).toBe(1)
    expect(await jobKeys()).toHaveLength(4)
  })
})

describe("status", () => {
  it("counts each state apart, says while an enqueue holds the lock, and a fleet pause's time left", async () => {
    const fresh = await status()
    expect(fresh).toEqual({
      operation: undefined,
      pausedBecause: undefined,
      run: undefined,
      enqueuing: false,
      waiting: 0,
      active: 0,
      delayed: 0,
      failed: 0,
      prioritized: 0,
      isPaused: false,
      rateLimitedForMillis: 0,
      failedByKind: [],
      failedScanned: 0
    })
    // An enqueue whose input stalls after one person holds the lock.
    let release: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    const input = (async function*() {
      yield uid(0)
      await released
    })()
    const enqueuing = enqueue(input)
    await eventually(async () => (await status()).waiting === 1)
    expect((await status()).enqueuing).toBe(true)
    release!()
    await enqueuing
    expect((await status()).enqueuing).toBe(false)
    // Jobs in every state, each count its own: BullMQ's, as any client of the queue makes them.
    const queue = bullQueue()
    let finish: () => void
    const held = new Promise<void>((resolve) => (finish = resolve))
    const worker = new Worker("test", () => held, { connection: connect(), concurrency: 1 })
    try {
      await eventually(async () => (await status()).active === 1)
      await queue.addBulk([
        ...Array.from({ length: 2 }, (_, i) => ({ name: "x", data: {}, opts: { jobId: `w${i}` } })),
        ...Array.from({ length: 3 }, (_, i) => ({ name: "x", data: {}, opts: { jobId: `d${i}`, delay: 600_000 } })),
        ...Array.from({ length: 4 }, (_, i) => ({ name: "x", data: {}, opts: { jobId: `p${i}`, priority: 1 } }))
      ])
      // What a worker's 429 sets: every worker of the queue waits a minute.
      await queue.rateLimit(60_000)
      const counted = await status()
      expect(counted).toMatchObject({ waiting: 2, active: 1, delayed: 3, prioritized: 4, failed: 0 })
      expect(counted.rateLimitedForMillis).toBeGreaterThan(0)
      expect(counted.rateLimitedForMillis).toBeLessThanOrEqual(60_000)
    } finally {
      finish!()
      await worker.close()
      await queue.close()
    }
  })

  /** Failed jobs as BullMQ keeps them, each failing after the one before (the newest read first). */
  const failedJobs = async (reasons: ReadonlyArray<string | undefined>) => {
    const at = Date.now() - reasons.length
    const batch = connect().multi()
    reasons.forEach((reason, i) => {
      batch.hset(`bull:test:f${i}`, {
        name: "person",
        data: "{}",
        opts: "{}",
        timestamp: String(at + i),
        finishedOn: String(at + i),
        ...(reason === undefined ? {} : { failedReason: reason })
      })
      batch.zadd("bull:test:failed", String(at + i), `f${i}`)
    })
    await batch.exec()
  }

  it("failures by kind, most first: the text before a colon; a reason with none, or none at all, is other", async () => {
    // The newest (read first) are the rarest kind: the order is the counts', not the failures'.
    await failedJobs([
      "ServerError: 500",
      "ServerError: 503",
      "ServerError: 502",
      "job stalled more than allowable limit",
      ": no kind before the colon",
      undefined,
      "SinkFailed: the sink threw",
      "SinkFailed: the sink threw"
    ])
    const { failed, failedByKind, failedScanned } = await status()
    expect({ failed, failedByKind, failedScanned }).toEqual({
      failed: 8,
      failedByKind: [["other", 3], ["ServerError", 3], ["SinkFailed", 2]],
      failedScanned: 8
    })
  })

  it("reads failures a thousand at a time: 1,001 failed jobs are each counted once", async () => {
    await failedJobs(Array.from({ length: 1001 }, () => "ServerError: 500"))
    const { failedByKind, failedScanned } = await status()
    expect({ failedByKind, failedScanned }).toEqual({ failedByKind: [["ServerError", 1001]], failedScanned: 1001 })
  })
})

describe("retryFailed", () => {
  it("puts back the jobs it finds, attempts afresh; skips an id whose job is gone; leaves no copy in Redis", async () => {
    await enqueue([unknown(0)], { attempts: 1 })
    await promiseWork((done) => done.length >= 1)
    await eventually(async () => (await status()).failed === 1)
    const admin = connect()
    const [id] = await admin.zrange("bull:test:failed", 0, -1)
    // An id left in the failed set whose job was removed (someone cleaned the job records).
    await admin.zadd("bull:test:failed", "1", "gone")
    expect(await retryFailed()).toBe(1)
    const queue = bullQueue()
    try {
      const job = await queue.getJob(id!)
      expect({ state: await job!.getState(), made: job!.attemptsMade, started: job!.attemptsStarted }).toEqual({
        state: "waiting",
        made: 0,
        started: 0
      })
    } finally {
      await queue.close()
    }
    expect(await admin.keys("*retrying*")).toEqual([])
  })
})

describe("a Redis user allowed the queue's keys alone", () => {
  it("enqueue, work, status, retryFailed and resume touch no other key", async () => {
    const admin = connect()
    await admin.call("ACL", "SETUSER", "queue-only", "on", "nopass", "~bull:test:*", "&*", "+@all")
    try {
      const own = () => ({
        connection: connect(redis.port, { username: "queue-only", password: "unused" }),
        name: "test",
        sealingKey: KEY
      })
      await Effect.runPromise(
        ClinicalQueue.enqueue({ ...own(), operation: PersonData.medications, attempts: 1 }, [unknown(0), uid(0)])
      )
      const client = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
      const records: Array<ClinicalQueue.JobRecord> = []
      const running = await ClinicalQueue.createWorker(client, {
        ...own(),
        operation: PersonData.medications,
        sink: (record) => {
          records.push(record)
        }
      })
      await eventually(async () => (await Effect.runPromise(ClinicalQueue.status(own()))).failed === 1)
      await running.close()
      await client.close()
      expect(records).toHaveLength(2)
      expect(await Effect.runPromise(ClinicalQueue.retryFailed(own()))).toBe(1)
      await Effect.runPromise(ClinicalQueue.resume(own()))
      expect(await Effect.runPromise(ClinicalQueue.status(own()))).toMatchObject({ waiting: 1, failed: 0 })
    } finally {
      await admin.call("ACL", "DELUSER", "queue-only")
    }
  })
})

describe("workers", () => {
  it("a worker's refused setting is an InvalidConfig naming it, in both forms, before it starts", async () => {
    const anyClient = Layer.succeed(PersonData.PersonData, {} as PersonData.Service)
    const options = { ...queueOptions(), operation: PersonData.medications, sink: () => {}, concurrency: 0 }
    const expected = { _tag: "InvalidConfig", setting: "concurrency", reason: "must be a whole number from 1 to 10000" }
    expect(await failureOf(Effect.scoped(ClinicalQueue.worker(options)).pipe(Effect.provide(anyClient))))
      .toMatchObject(expected)
    const client = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
    const refused = await ClinicalQueue.createWorker(client, options).then(() => undefined, (error: unknown) => error)
    await client.close()
    expect(refused).toMatchObject(expected)
  })

  it("redactEchoedSecrets over a Promise client: the echoed PersonUid reaches the sink as <redacted>; without it, as sent", async () => {
    await enqueue([uid(3)])
    const itemsOf = (records: ReadonlyArray<ClinicalQueue.JobRecord>) =>
      JSON.stringify(records[0]!.outcome === "Success" && records[0]!.result.items)
    const redacted = await promiseWork((done) => done.length >= 1, { redactEchoedSecrets: true })
    expect(itemsOf(redacted.records)).toContain("Echo of <redacted>")
    expectNone("the items", itemsOf(redacted.records), [uid(3)])
    // The default: the application's sink gets the service's items as they are.
    await enqueue([uid(3)], { again: true, inputId: "second" })
    const plain = await promiseWork((done) => done.length >= 1)
    expect(itemsOf(plain.records)).toContain(`Echo of ${uid(3)}`)
  })

  it("over a Promise client: the service's failure reaches the sink; anything else it throws is retried, its text unshown", async () => {
    // A client of the application's own: a typed failure of the service, a bug, and a refused setting.
    const thrown: Record<string, unknown> = {
      [uid(0)]: new ClinicalError.ApiError({
        operation: "medications",
        status: 200,
        errorType: "PersonNotFound",
        errorMessage: null
      }),
      [uid(1)]: new TypeError(`cannot read the answer for ${uid(1)}`),
      [uid(2)]: new ClinicalError.InvalidConfig({ setting: "timeout", reason: `refused for ${uid(2)}` })
    }
    const client = {
      get: (_: PersonData.Operation, personUid: string) => Promise.reject(thrown[personUid])
    } as unknown as Client
    await enqueue([uid(0), uid(1), uid(2)], { attempts: 1 })
    const told: Array<string> = []
    const records: Array<ClinicalQueue.JobRecord> = []
    const running = await ClinicalQueue.createWorker(client, {
      ...queueOptions(),
      operation: PersonData.medications,
      onError: (error) => told.push(error.message),
      sink: (record) => {
        records.push(record)
      }
    })
    await eventually(async () => (await status()).failed === 3)
    await running.close()
    expect(records).toMatchObject([{ index: 0, outcome: "Failure", error: { _tag: "ApiError" } }])
    expect((await status()).failedByKind).toEqual([["CallFailed", 2], [expect.stringMatching(/^ApiError/), 1]])
    expect(told).toEqual([
      "queue work failed: CallFailed: the client failed unexpectedly",
      "queue work failed: CallFailed: the client failed unexpectedly"
    ])
    expectNone("Redis", await RedisServer.contents(redis.port), [uid(1), uid(2)])
  })
})
