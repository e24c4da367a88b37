/**
 * docs/distributed.md, run: its command-line session against a real redis-server and the mock on
 * loopback (the built executable, BullMQ and ioredis as installed), and each region below, copied
 * into the page (npm run docs:snippets): the Effect and Promise wiring of a worker.
 */
import { Effect, Layer, Redacted } from "effect"
import { ClinicalClient, PersonData, TokenStore } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { Redis } from "ioredis"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import * as RedisServer from "../support/RedisServer.js"
import { binDirectory, runSession, session, shape } from "../support/Session.js"

const root = Path.resolve(import.meta.dirname, "../..")
const page = Fs.readFileSync(Path.join(root, "docs/distributed.md"), "utf8")
const sealingKey = Redacted.make("q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4=")

let server: RedisServer.RedisServer
let mock: MockClinicalServer.Started
let dir = ""
beforeAll(async () => {
  ;[server, mock] = await Promise.all([RedisServer.start(), MockClinicalServer.start()])
  dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-clinical-distributed-"))
})
afterAll(async () => {
  await Promise.all([server?.stop(), mock?.close()])
  Fs.rmSync(dir, { recursive: true, force: true })
})
afterEach(() => RedisServer.flushAll(server.port))

const personUids = () => mock.persons.map((person) => person.personUid)

/** The mock's persons, enqueued for medications. */
const enqueueAll = () =>
  Effect.runPromise(
    ClinicalQueue.enqueue({
      connection: new Redis(server.url, { maxRetriesPerRequest: null }),
      sealingKey,
      operation: PersonData.medications
    }, personUids())
  )

describe("docs/distributed.md", () => {
  it("the command-line session prints what the page shows", async () => {
    Fs.writeFileSync(Path.join(dir, "persons.txt"), [...personUids(), "no-such-person"].join("\n") + "\n")
    const env = {
      PATH: `${binDirectory(dir)}:${process.env.PATH}`,
      NO_COLOR: "1",
      CLINICAL_BASE_URL: mock.url,
      CLINICAL_APPLICATION_ID: mock.applicationId,
      CLINICAL_REDIS_URL: server.url,
      CLINICAL_SEALING_KEY: Redacted.value(sealingKey)
    }
    await runSession(
      session(page, "docs/distributed.md"),
      dir,
      env,
      (text) => shape(text).replace(/peak memory \d+ MiB/g, "peak memory <n> MiB")
    )
  }, 120_000)

  it("an Effect worker", async () => {
    const redisUrl = server.url
    const options = { baseUrl: mock.url, applicationId: mock.applicationId }
    const saved: Array<number> = []
    const save = async (index: number, items: ReadonlyArray<unknown>) => {
      saved.push(index)
      expect(items.length).toBeGreaterThan(0)
    }
    await enqueueAll()
    // #region effect
    // BullMQ's connection: commands wait out a Redis restart rather than fail.
    const connection = new Redis(redisUrl, { maxRetriesPerRequest: null })
    // The token store's: it fails fast, and the client goes on alone meanwhile (docs/scaling.md).
    const store = new Redis(redisUrl, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false })
    const client = ClinicalClient.layerUndici({ ...options, retryRateLimited: false }).pipe(
      Layer.provide(TokenStore.layerRedis({ redis: TokenStore.ioredis(store), sealingKey }))
    )
    const worker = ClinicalQueue.layerWorker({
      connection,
      sealingKey,
      operation: PersonData.medications,
      concurrency: 16,
      // Your database: called once per person done, at least once (de-duplicate by index or jobId).
      sink: (record) => record.outcome === "Success" ? save(record.index, record.result.items) : undefined
    }).pipe(Layer.provide(client))
    // #endregion
    await Effect.runPromise(
      Effect.scoped(Effect.zipRight(
        Layer.launch(worker).pipe(Effect.fork),
        Effect.promise(async () => {
          while (saved.length < 3) await new Promise((resolve) => setTimeout(resolve, 20))
        })
      ))
    )
    expect(saved.sort()).toEqual([0, 1, 2])
    connection.disconnect()
    store.disconnect()
  })

  it("a Promise worker, closed on SIGTERM", async () => {
    const redisUrl = server.url
    const options = { baseUrl: mock.url, applicationId: mock.applicationId }
    const saved: Array<number> = []
    const save = async (index: number) => {
      saved.push(index)
    }
    await enqueueAll()
    // #region promise
    const connection = new Redis(redisUrl, { maxRetriesPerRequest: null })
    const clinical = createClinicalClient({ ...options, retryRateLimited: false })
    const worker = await ClinicalQueue.createWorker(clinical, {
      connection,
      sealingKey,
      operation: PersonData.medications,
      sink: async (record) => {
        if (record.outcome === "Success") await save(record.index)
      }
    })
    // On SIGTERM: finish the jobs in hand, take no more, then leave.
    const stop = async () => {
      await worker.close()
      await clinical.close()
      await connection.quit()
    }
    process.once("SIGTERM", stop)
    // #endregion
    while (saved.length < 3) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(saved.sort()).toEqual([0, 1, 2])
    process.removeListener("SIGTERM", stop)
    await stop()
    expect(worker.worker.isRunning()).toBe(false)
  })
})
