/**
 * One job of effect-clinical/bullmq, processed on a real redis-server by real BullMQ, seen as its
 * user sees it: what the failed job keeps (its reason, its one-line stack trace), what the metrics
 * count (jobs by outcome, failures by kind, at most 20 kinds; the queue's depth), what `onError`
 * hears (the application's throws, Redis going away), how a fleet pause is only ever extended, what
 * the queue's own record says (a pause's reason, a refused key or operation), and how `close()`
 * ends with Redis frozen. The persons are read through a PersonData layer of the test's own, each
 * answer scripted. The queue's wider behaviour, over the mock service, is test/Queue.test.ts.
 */
import { Queue } from "bullmq"
import { type Duration, Effect, Either, Layer, Metric, Option, Redacted } from "effect"
import { ClinicalError, PersonData } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { Redis } from "ioredis"
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest"
import { depth as jobProcessorDepth } from "../src/internal/queue/jobProcessor.js"
import { settingsOf } from "../src/internal/queue/queueSettings.js"
import { signed } from "../src/internal/queue/runRecord.js"
import * as CapturingTracer from "./support/CapturingTracer.js"
import { expectNone } from "./support/Leaks.js"
import * as RedisServer from "./support/RedisServer.js"

const KEY = "q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4="
const OTHER_KEY = "Zx8c7v6b5n4m3a2s1d0fGhJkLqWeRtYuIoPaSdFgHjK="

let redis: RedisServer.RedisServer
const connections: Array<Redis> = []
const queues: Array<Queue> = []

beforeAll(async () => {
  redis = await RedisServer.start()
})
afterAll(async () => {
  await redis?.stop()
})
afterEach(async () => {
  for (const queue of queues.splice(0)) await queue.close()
  for (const connection of connections.splice(0)) connection.disconnect()
  await RedisServer.flushAll(redis.port)
})

const connect = (port = redis.port): Redis => {
  const connection = new Redis(port, "127.0.0.1", { maxRetriesPerRequest: null })
  connection.on("error", () => {})
  connections.push(connection)
  return connection
}

const queueOptions = (key: string = KEY, port = redis.port) => ({
  connection: connect(port),
  name: "test",
  sealingKey: key
})

/** BullMQ's own view of the queue, as an operator would open it. */
const bullQueue = (port = redis.port): Queue => {
  const queue = new Queue("test", { connection: connect(port) })
  queues.push(queue)
  return queue
}

const enqueue = (uids: Iterable<string>, options?: Partial<ClinicalQueue.EnqueueOptions>) =>
  Effect.runPromise(
    ClinicalQueue.enqueue(
      { ...queueOptions(), operation: PersonData.medications, backoff: "10 millis", ...options },
      uids
    )
  )

const status = () => Effect.runPromise(ClinicalQueue.status(queueOptions()))

/** Waits until `check` holds, looking every 20 ms (the test's own timeout bounds the wait). */
const eventually = async (check: () => Promise<boolean> | boolean): Promise<void> => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20))
}

const at = { operation: "medications", method: "POST", url: "https://clinical.example/api/Medications" }
const found: PersonData.Result<PersonData.Item> = { items: [], raw: {} }
const notFound = (errorType = "PersonNotFound") =>
  new ClinicalError.ApiError({ ...at, status: 200, errorType, errorMessage: "no such person" })

type Answer = Effect.Effect<PersonData.Result<PersonData.Item>, ClinicalError.ClinicalError>

/**
 * A PersonData of the application's own: each person's call answered by `answer`, told how many
 * times that person was asked before. `asked()` counts every call.
 */
const scripted = (answer: (personUid: string, before: number) => Answer) => {
  const times = new Map<string, number>()
  let calls = 0
  const layer = Layer.succeed(PersonData.PersonData, {
    get: (_operation: PersonData.Operation, personUid: string) =>
      Effect.suspend(() => {
        calls++
        const before = times.get(personUid) ?? 0
        times.set(personUid, before + 1)
        return answer(personUid, before)
      })
  } as unknown as PersonData.Service)
  return { layer, asked: () => calls }
}

type WorkOptions = Partial<ClinicalQueue.WorkerOptions> & { readonly operation?: PersonData.Operation }

/** An Effect worker over `layer`, started; `close()` ends its scope (closing it) and waits for that. */
const started = async (
  layer: Layer.Layer<PersonData.PersonData>,
  options: WorkOptions & { readonly sink: ClinicalQueue.Sink }
): Promise<{ readonly close: () => Promise<void> }> => {
  let stop!: () => void
  const stopped = new Promise<void>((resolve) => (stop = resolve))
  let up!: () => void
  const isUp = new Promise<void>((resolve) => (up = resolve))
  const ended = Effect.runPromise(
    Effect.scoped(
      ClinicalQueue.worker({ ...queueOptions(), operation: PersonData.medications, concurrency: 4, ...options }).pipe(
        Effect.tap(() => up()),
        Effect.zipRight(Effect.promise(() => stopped))
      )
    ).pipe(Effect.provide(layer))
  )
  await Promise.race([isUp, ended])
  return {
    close: () => {
      stop()
      return ended
    }
  }
}

/**
 * An Effect worker over `layer` until `done` holds (looked at every 20 ms); the sink's records. The
 * worker is closed before it returns.
 */
const work = async (
  layer: Layer.Layer<PersonData.PersonData>,
  done: (records: ReadonlyArray<ClinicalQueue.JobRecord>) => Promise<boolean> | boolean,
  options?: WorkOptions
): Promise<Array<ClinicalQueue.JobRecord>> => {
  const records: Array<ClinicalQueue.JobRecord> = []
  const worker = await started(layer, {
    sink: (record) => {
      records.push(record)
    },
    ...options
  })
  try {
    await eventually(() => done(records))
  } finally {
    await worker.close()
  }
  return records
}

/** The failed jobs as BullMQ holds them: each one's reason and stack trace. */
const failedJobs = async () =>
  (await bullQueue().getFailed()).map((job) => ({ reason: job.failedReason, stacktrace: job.stacktrace }))

/** The counter `name`'s counts by the value of its tag `tag` (as the OpenTelemetry exporter reads them). */
const countsBy = (name: string, tag: string): Map<string, number> => {
  const counts = new Map<string, number>()
  for (const pair of Metric.unsafeSnapshot()) {
    if (pair.metricKey.name !== name) continue
    const value = String(pair.metricKey.tags.find((t) => t.key === tag)?.value)
    const count = Number((pair.metricState as { count?: number }).count ?? 0)
    if (count > 0) counts.set(value, (counts.get(value) ?? 0) + count)
  }
  return counts
}

/** What the counters counted since `before`, by tag value (the values not counted left out). */
const since = (before: Map<string, number>, after: Map<string, number>): Record<string, number> =>
  Object.fromEntries([...after].map(([value, n]) => [value, n - (before.get(value) ?? 0)]).filter(([, n]) => n !== 0))

const jobsByOutcome = () => countsBy("clinical_queue_jobs_total", "outcome")
const failuresByKind = () => countsBy("clinical_queue_failures_total", "kind")

/**
 * `counted` by kind as the failures metric tags them now: a kind it counts apart under its name,
 * any other (past the 20 kinds the metric keeps apart, another test took them) as `other`.
 */
const taggedNow = (counted: Record<string, number>): Record<string, number> => {
  const apart = failuresByKind()
  const tagged: Record<string, number> = {}
  for (const [kind, n] of Object.entries(counted)) {
    const tag = apart.has(kind) && kind !== "other" ? kind : "other"
    tagged[tag] = (tagged[tag] ?? 0) + n
  }
  return tagged
}

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

describe("pauses", () => {
  it("a 429 while a longer pause holds leaves the longer one: a pause is extended, never shortened", async () => {
    await enqueue(["Person0000000000000000000000=="])
    let answer!: () => void
    const answered = new Promise<void>((resolve) => (answer = resolve))
    const { asked, layer } = scripted(() =>
      Effect.promise(() => answered).pipe(
        Effect.zipRight(Effect.fail(new ClinicalError.RateLimited({ ...at, status: 429, retryAfterMillis: 1_000 })))
      )
    )
    const outcomes = jobsByOutcome()
    const failures = failuresByKind()
    await work(layer, async () => {
      if (asked() === 1 && (await status()).rateLimitedForMillis === 0) {
        // Another worker's pause, a minute long, set while this call is under way.
        await bullQueue().rateLimit(60_000)
        answer()
      }
      // Until the attempt is counted, whatever its outcome.
      return Object.keys(since(outcomes, jobsByOutcome())).length > 0
    })
    expect((await status()).rateLimitedForMillis).toBeGreaterThan(30_000)
    expect(since(outcomes, jobsByOutcome())).toEqual({ paused: 1 })
    expect(since(failures, failuresByKind())).toEqual(taggedNow({ RateLimited: 1 }))
  })

  it("a refused token pauses the queue with its reason, counted as paused; resumed, the person is read", async () => {
    await enqueue(["Person0000000000000000000000=="])
    const { layer } = scripted((_, before) =>
      before === 0 ? Effect.fail(new ClinicalError.Unauthorized({ ...at, status: 401 })) : Effect.succeed(found)
    )
    const outcomes = jobsByOutcome()
    const failures = failuresByKind()
    const records = await work(layer, async (done) => {
      const now = await status()
      if (now.isPaused) {
        expect(now.pausedBecause).toMatch(/^the service refused a fresh token \(Unauthorized\)/)
        await Effect.runPromise(ClinicalQueue.resume(queueOptions()))
      }
      return done.length === 1
    })
    expect(records).toMatchObject([{ outcome: "Success" }])
    expect(since(outcomes, jobsByOutcome())).toEqual({ paused: 1, completed: 1 })
    expect(since(failures, failuresByKind())).toEqual(taggedNow({ Unauthorized: 1 }))
  })
})

describe("the queue's own record", () => {
  const metaKey = "bull:test:effect-clinical"

  it("why it was paused: an empty reason is none; a long one (someone else's) is cut at 500 characters", async () => {
    await enqueue(["Person0000000000000000000000=="])
    const admin = connect()
    await admin.hset(metaKey, "pausedBecause", "")
    expect((await status()).pausedBecause).toBeUndefined()
    await admin.hset(metaKey, "pausedBecause", `maintenance ${"r".repeat(1_000)}`)
    expect((await status()).pausedBecause).toBe(`maintenance ${"r".repeat(488)}`)
  })

  it("an operation signed with the key but not a name (another program's record) reads as none", async () => {
    await enqueue(["Person0000000000000000000000=="])
    const settings = Either.getOrThrow(settingsOf(queueOptions()))
    await connect().hset(metaKey, "operation", signed(settings.keys, ":operation", { name: "medications" }))
    expect((await status()).operation).toBeUndefined()
  })

  it("a worker with another key, or of other operations, is refused at start, the refusal saying why", async () => {
    await enqueue(["Person0000000000000000000000=="], { operation: PersonData.ethnicities })
    const { layer } = scripted(() => Effect.succeed(found))
    const refused = (options: Parameters<typeof ClinicalQueue.worker>[0]) =>
      Effect.runPromise(Effect.flip(Effect.scoped(ClinicalQueue.worker(options))).pipe(Effect.provide(layer)))
    expect(await refused({ ...queueOptions(OTHER_KEY), operation: PersonData.ethnicities, sink: () => {} })).toEqual(
      new ClinicalError.InvalidConfig({
        setting: "sealingKey",
        reason:
          "does not open the records of the queue \"test\": it is not the key the queue was filled with, and every process of a queue needs the same key"
      })
    )
    expect(
      await refused({
        ...queueOptions(),
        operation: [PersonData.medications, PersonData.detailedEthnicities],
        sink: () => {}
      })
    ).toEqual(
      new ClinicalError.InvalidConfig({
        setting: "operation",
        reason: "the queue \"test\" holds ethnicities jobs, not medications or detailedEthnicities"
      })
    )
  })

  it("its events stream is kept to about 1,000 entries (BullMQ's default keeps 10,000)", async () => {
    const uids = Array.from({ length: 1_500 }, (_, i) => `Person${String(i).padStart(6, "0")}0000000000000000==`)
    await enqueue(uids)
    expect((await status()).waiting).toBe(1_500)
    // Trimmed approximately: whole blocks of entries, never much past the length asked.
    expect(await connect().xlen("bull:test:events")).toBeLessThanOrEqual(1_200)
  })
})

describe("a worker's life", () => {
  it("a span per attempt (queue, run, position, attempt, wait, outcome; no PersonUid), the call's spans its children", async () => {
    const { spans, tracer } = await Effect.runPromise(CapturingTracer.make)
    const uids = ["PersonSpanA000000000000000000==", "PersonSpanB000000000000000000=="]
    await enqueue(uids)
    // The first person's first read fails with a 503 (retried by BullMQ), the second is not known.
    const layer = scripted((personUid, before) =>
      Effect.withSpan(
        (personUid === uids[0] && before === 0
          ? Effect.fail(new ClinicalError.ServerError({ ...at, status: 503 }))
          : personUid === uids[0]
          ? Effect.succeed(found)
          : Effect.fail(notFound())) as Answer,
        "inner read"
      )
    ).layer
    await work(Layer.merge(layer, Layer.setTracer(tracer)), (records) => records.length >= 2)
    const jobs = spans.filter((span) => span.name === "ClinicalQueue.job")
    const attributes = jobs.map((span) => Object.fromEntries(span.attributes))
    expect(
      attributes.map((a) => [a["clinical.queue.index"], a["clinical.queue.attempt"], a["clinical.queue.outcome"]])
        .sort()
    )
      .toEqual([[0, 1, "retried"], [0, 2, "completed"], [1, 1, "failed"]])
    for (const a of attributes) {
      expect(a).toMatchObject({
        "messaging.system": "bullmq",
        "messaging.destination.name": "test",
        "clinical.operation": "medications",
        "clinical.queue.run": 1
      })
      expect(a["clinical.queue.wait_ms"]).toBeGreaterThanOrEqual(0)
    }
    expect(attributes.find((a) => a["clinical.queue.outcome"] === "failed")?.["clinical.error"]).toBe(
      "ApiError PersonNotFound"
    )
    expect(jobs.every((span) => span.kind === "consumer" && span.status._tag === "Ended")).toBe(true)
    // Each read's span is a child of its attempt's span: the trace of a job holds the client's spans.
    const reads = spans.filter((span) => span.name === "inner read")
    expect(reads).toHaveLength(3)
    for (const read of reads) {
      expect(jobs.map((job) => job.spanId)).toContain(Option.getOrThrow(read.parent).spanId)
    }
    expectNone("job spans", JSON.stringify(attributes), uids)
  })

  it("each worker samples the queue's depth by state into clinical_queue_depth, every 5 seconds", async () => {
    const depth = () =>
      Object.fromEntries(
        Metric.unsafeSnapshot().filter((pair) => pair.metricKey.name === "clinical_queue_depth").map((pair) => [
          String(pair.metricKey.tags.find((t) => t.key === "state")?.value),
          (pair.metricState as { value?: number }).value
        ])
      )
    await enqueue(Array.from({ length: 7 }, (_, i) => `Person${i}000000000000000000000==`))
    // Paused: the jobs stay where they are.
    await bullQueue().pause()
    const before = JSON.stringify(depth())
    const worker = await started(scripted(() => Effect.succeed(found)).layer, { sink: () => {} })
    try {
      await eventually(() => JSON.stringify(depth()) !== before)
    } finally {
      await worker.close()
    }
    expect(depth()).toEqual({ waiting: 7, active: 0, delayed: 0, failed: 0, prioritized: 0 })
  }, 20_000)

  it("each starting worker records its timings in the queue's meta: the shortest lock and the longest stall interval are kept", async () => {
    await enqueue([`PersonTimings0000000000000000==`])
    await bullQueue().pause()
    const meta = () => connect().hmget("bull:test:effect-clinical", "lockMillis", "stalledMillis")
    const timings: ReadonlyArray<readonly [Duration.DurationInput, Duration.DurationInput]> = [
      ["20 seconds", "5 seconds"],
      ["9 seconds", "30 seconds"],
      ["12 seconds", "6 seconds"]
    ]
    for (const [lockDuration, stalledInterval] of timings) {
      const worker = await started(scripted(() => Effect.succeed(found)).layer, {
        sink: () => {},
        lockDuration,
        stalledInterval
      })
      await worker.close()
    }
    // A live worker renews its locks above half the shortest lock: none of a mixed fleet is taken for stopped.
    expect(await meta()).toEqual(["9000", "30000"])
  })

  it("a closing worker samples the depth once more, labelled with the queue: read after the last job, it says none is left", async () => {
    const depth = () =>
      Metric.unsafeSnapshot().filter((pair) =>
        pair.metricKey.name === "clinical_queue_depth" &&
        pair.metricKey.tags.some((t) => t.key === "queue" && t.value === "test")
      ).map((pair) => [
        String(pair.metricKey.tags.find((t) => t.key === "state")?.value),
        (pair.metricState as { value?: number }).value
      ])
    await enqueue(Array.from({ length: 5 }, (_, i) => `Person${i}000000000000000000000==`))
    // Set as a worker's earlier sample would have left it: five waiting.
    await Effect.runPromise(
      Metric.set(Metric.tagged(Metric.tagged(jobProcessorDepth, "queue", "test"), "state", "waiting"), 5)
    )
    const records = await work(scripted(() => Effect.succeed(found)).layer, (done) => done.length >= 5)
    expect(records).toHaveLength(5)
    expect(Object.fromEntries(depth())).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 0, prioritized: 0 })
  })

  it(
    "Redis going away: onError hears each connection error as the worker's, and nothing reaches the console",
    async () => {
      const own = await RedisServer.start()
      const printed = vi.spyOn(console, "error")
      try {
        const told: Array<ClinicalQueue.QueueError | ClinicalError.InvalidConfig> = []
        const worker = await started(scripted(() => Effect.succeed(found)).layer, {
          ...queueOptions(KEY, own.port),
          sink: () => {},
          onError: (error) => told.push(error)
        })
        await own.kill()
        await eventually(() => told.length > 0)
        await own.restart()
        await worker.close()
        expect(told[0]).toMatchObject({ _tag: "QueueError", operation: "work" })
        expect(told[0]!.message).toMatch(/^queue work failed: /)
        expect(printed).not.toHaveBeenCalled()
      } finally {
        printed.mockRestore()
        await own.stop()
      }
    },
    20_000
  )

  it(
    "close() with Redis frozen: past closeTimeout the attempt is given up, and close() returns without Redis",
    async () => {
      const own = await RedisServer.start()
      try {
        await Effect.runPromise(ClinicalQueue.enqueue({
          ...queueOptions(KEY, own.port),
          operation: PersonData.medications
        }, ["Person0000000000000000000000=="]))
        // A call that never ends.
        const { asked, layer } = scripted(() => Effect.never)
        const worker = await started(layer, {
          ...queueOptions(KEY, own.port),
          sink: () => {},
          closeTimeout: "200 millis"
        })
        await eventually(() => asked() === 1)
        own.pause()
        await worker.close()
        own.resume()
        // The attempt given up is written back once Redis answers again: the person is left to another worker.
        const admin = connect(own.port)
        await eventually(async () => {
          const [id] = (await admin.keys("bull:test:*")).filter((key) => /^bull:test:[0-9a-f]{32}$/.test(key))
          return (await admin.hget(id!, "failedReason"))?.startsWith("Abandoned: ") === true
        })
      } finally {
        own.resume()
        await own.stop()
      }
    },
    20_000
  )

  it("a sink that returned leaves no timer behind: a closed worker with a long sinkTimeout holds no process open", async () => {
    const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === "Timeout").length
    const before = timers()
    await enqueue(Array.from({ length: 10 }, (_, i) => `Person${i}000000000000000000000==`))
    await work(scripted(() => Effect.succeed(found)).layer, (records) => records.length === 10, {
      sinkTimeout: "1 hour"
    })
    await eventually(() => timers() <= before)
  })
})

describe("a sealing key that is not the queue's (issue 50)", () => {
  const metaKey = "bull:test:effect-clinical"
  const wrongKey = new ClinicalError.InvalidConfig({
    setting: "sealingKey",
    reason:
      "does not open the records of the queue \"test\": it is not the key the queue was filled with, and every process of a queue needs the same key"
  })

  it("status, retryFailed and resume refuse it, saying so, and change nothing; before, status read as no run and no operation", async () => {
    await enqueue(["Person0000000000000000000000==", "Person1111111111111111111111=="], { attempts: 1 })
    await work(scripted(() => Effect.fail(notFound())).layer, async () => (await status()).failed === 2)
    await bullQueue().pause()
    const other = queueOptions(OTHER_KEY)
    expect(await Effect.runPromise(Effect.flip(ClinicalQueue.status(other)))).toEqual(wrongKey)
    expect(await Effect.runPromise(Effect.flip(ClinicalQueue.retryFailed(other)))).toEqual(wrongKey)
    expect(await Effect.runPromise(Effect.flip(ClinicalQueue.resume(other)))).toEqual(wrongKey)
    const after = await status()
    expect(after).toMatchObject({ operation: "medications", failed: 2, waiting: 0, isPaused: true })
    expect(after.run).toMatchObject({ run: 1, persons: 2 })
    expect(String(wrongKey)).not.toContain(KEY)
    expect(String(wrongKey)).not.toContain(OTHER_KEY)
  })

  it("a key check that is not one of ours (16 hex digits) is none: no refusal, and a worker claims nothing over it", async () => {
    await enqueue(["Person0000000000000000000000=="])
    await connect().hset(metaKey, "keyCheck", "# Server\r\nredis_version:7.2.0")
    expect(await Effect.runPromise(ClinicalQueue.status(queueOptions(OTHER_KEY)))).toMatchObject({ waiting: 1 })
  })

  it("a worker started on an empty queue claims it for its key: an enqueue with another is refused", async () => {
    const { layer } = scripted(() => Effect.succeed(found))
    const worker = await started(layer, { sink: () => {} })
    try {
      const refused = await Effect.runPromise(Effect.flip(ClinicalQueue.enqueue({
        ...queueOptions(OTHER_KEY),
        operation: PersonData.medications
      }, ["Person0000000000000000000000=="])))
      expect(refused).toEqual(wrongKey)
      expect((await status()).waiting).toBe(0)
    } finally {
      await worker.close()
    }
  })

  it("a worker whose key the queue no longer records takes no job it cannot open: each goes back, unattempted, and it stops", async () => {
    const { asked, layer } = scripted(() => Effect.succeed(found))
    const told: Array<string> = []
    const worker = await started(layer, { sink: () => {}, onError: (error) => told.push(error.message) })
    try {
      // Someone replaced the queue's record, then filled it with another key.
      await connect().del(metaKey)
      await enqueue(["Person0000000000000000000000==", "Person1111111111111111111111=="], { sealingKey: OTHER_KEY })
      await eventually(() => told.length > 0)
      expect(told[0]).toBe(new ClinicalError.InvalidConfig(wrongKey).message)
      const queue = bullQueue()
      await eventually(async () => (await queue.getJobCounts("active")).active === 0)
      expect(await queue.getJobCounts("waiting", "failed", "completed")).toEqual({
        waiting: 2,
        failed: 0,
        completed: 0
      })
      for (const job of await queue.getWaiting()) expect(job.attemptsMade).toBe(0)
      expect(asked()).toBe(0)
    } finally {
      await worker.close()
    }
    // A worker with the queue's key reads them both.
    const records = await work(layer, (done) => done.length === 2, { ...queueOptions(OTHER_KEY) })
    expect(records.map((record) => record.outcome)).toEqual(["Success", "Success"])
  })
})
