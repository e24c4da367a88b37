/**
 * A worker of effect-clinical/bullmq through its life, on a real redis-server with real BullMQ: a
 * span per attempt, the queue's depth sampled (every 5 seconds, and once more on closing), its
 * timings in the queue's meta, and how `close()` ends (Redis frozen, no timer left). The persons are
 * read through a PersonData layer of the test's own, each answer scripted.
 */
import { type Duration, Effect, Layer, Metric, Option } from "effect"
import { ClinicalError, PersonData } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { describe, expect, it, vi } from "vitest"
import { depth as jobProcessorDepth } from "../src/internal/queue/jobProcessor.js"
import * as CapturingTracer from "./support/CapturingTracer.js"
import { expectNone } from "./support/Leaks.js"
import { bullQueue, connect, enqueue, eventually, KEY, queueOptions, useServers } from "./support/queueServers.js"
import * as RedisServer from "./support/RedisServer.js"
import { type Answer, at, found, notFound, scripted, started, work } from "./support/scriptedWorkers.js"

useServers()

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
