/**
 * The real parts of the queue's tests (test/Queue*.test.ts): a redis-server of the test file's own,
 * the mock served over loopback when the file gives it persons, the Redis connections and BullMQ
 * queues a test opened (closed after it, and Redis emptied), and the queue's options over them.
 * `redis` and `mock` are live bindings: set once `useServers`'s `beforeAll` has run.
 */
import { Queue } from "bullmq"
import { Effect } from "effect"
import { PersonData } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { MockClinicalServer } from "effect-clinical/testing"
import { Redis, type RedisOptions } from "ioredis"
import { afterAll, afterEach, beforeAll } from "vitest"
import * as RedisServer from "./RedisServer.js"

export const KEY = "q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4="
export const OTHER_KEY = "Zx8c7v6b5n4m3a2s1d0fGhJkLqWeRtYuIoPaSdFgHjK="

export let redis: RedisServer.RedisServer
export let mock: MockClinicalServer.Started
const connections: Array<Redis> = []
const queues: Array<Queue> = []

/**
 * Starts a redis-server before the file's tests (and the mock, serving `persons`, when given) and
 * stops them after; after each test, closes what it opened, empties Redis and resets the mock.
 */
export const useServers = (persons?: ReadonlyArray<MockClinicalServer.MockPerson>): void => {
  beforeAll(async () => {
    redis = await RedisServer.start()
    if (persons !== undefined) mock = await MockClinicalServer.start({ persons })
  })
  afterAll(async () => {
    await mock?.close()
    await redis?.stop()
  })
  afterEach(async () => {
    for (const queue of queues.splice(0)) await queue.close()
    for (const connection of connections.splice(0)) connection.disconnect()
    await RedisServer.flushAll(redis.port)
    if (persons !== undefined) {
      await mock.clearFaults()
      await mock.resetCounters()
    }
  })
}

/** A connection to this file's Redis (or the one at `port`), closed after the test. */
export const connect = (port = redis.port, options: RedisOptions = {}): Redis => {
  const connection = new Redis(port, "127.0.0.1", { maxRetriesPerRequest: null, ...options })
  connection.on("error", () => {})
  connections.push(connection)
  return connection
}

export const queueOptions = (key: string = KEY, port = redis.port) => ({
  connection: connect(port),
  name: "test",
  sealingKey: key
})

/** BullMQ's own view of the queue, as an operator would open it. */
export const bullQueue = (port = redis.port): Queue => {
  const queue = new Queue("test", { connection: connect(port) })
  queues.push(queue)
  return queue
}

export const enqueue = (uids: Iterable<string>, options?: Partial<ClinicalQueue.EnqueueOptions>) =>
  Effect.runPromise(
    ClinicalQueue.enqueue(
      { ...queueOptions(), operation: PersonData.medications, backoff: "10 millis", ...options },
      uids
    )
  )

export const status = () => Effect.runPromise(ClinicalQueue.status(queueOptions()))

/** Waits until `check` holds, looking every 20 ms (the test's own timeout bounds the wait). */
export const eventually = async (check: () => Promise<boolean> | boolean): Promise<void> => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20))
}
