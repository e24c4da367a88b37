/**
 * docs/distributed.md's Effect worker: reads the queue's jobs until SIGTERM, each result handed
 * to `save` (here a line on stdout, standing in for your database).
 *
 *   CLINICAL_BASE_URL=... CLINICAL_APPLICATION_ID=... CLINICAL_REDIS_URL=redis://127.0.0.1:6379 \
 *   CLINICAL_SEALING_KEY=<openssl rand -base64 32> node --import tsx examples/queue-worker.ts
 */
// #region worker
import { NodeRuntime } from "@effect/platform-node"
import { Config, Console, Effect, Layer } from "effect"
import { ClinicalClient, PersonData, TokenStore } from "effect-clinical"
import { ClinicalQueue } from "effect-clinical/bullmq"
import { Redis } from "ioredis"

// Your database: called once per person done, at least once (de-duplicate by index or jobId).
const save = (index: number, items: ReadonlyArray<unknown>) => Console.log(`saved #${index}: ${items.length} item(s)`)

const worker = Layer.unwrapScoped(Effect.gen(function*() {
  const redisUrl = yield* Config.string("CLINICAL_REDIS_URL")
  const sealingKey = yield* Config.redacted("CLINICAL_SEALING_KEY")
  const baseUrl = yield* Config.string("CLINICAL_BASE_URL")
  const applicationId = yield* Config.redacted("CLINICAL_APPLICATION_ID")
  // BullMQ's connection: commands wait out a Redis restart rather than fail.
  const connection = yield* Effect.acquireRelease(
    Effect.sync(() => new Redis(redisUrl, { maxRetriesPerRequest: null })),
    (redis) => Effect.promise(() => redis.quit())
  )
  // The token store's: it fails fast, and the client goes on alone meanwhile (docs/scaling.md).
  const store = yield* Effect.acquireRelease(
    Effect.sync(() => new Redis(redisUrl, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false })),
    (redis) => Effect.promise(() => redis.quit())
  )
  return ClinicalQueue.layerWorker({
    connection,
    sealingKey,
    operation: PersonData.medications,
    concurrency: 16,
    sink: (record) =>
      Effect.runPromise(
        record.outcome === "Success"
          ? save(record.index, record.result.items)
          : Console.error(`#${record.index} failed: ${record.error._tag}`)
      )
  }).pipe(
    // A 429 pauses every worker of the queue at once, rather than being retried here.
    Layer.provide(ClinicalClient.layerUndici({ baseUrl, applicationId, retryRateLimited: false })),
    Layer.provide(TokenStore.layerRedis({ redis: TokenStore.ioredis(store), sealingKey }))
  )
}))

// Runs until SIGTERM or Ctrl-C: the jobs in hand finish, then the connections close.
Layer.launch(worker).pipe(NodeRuntime.runMain)
// #endregion
