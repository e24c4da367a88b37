/**
 * effect-clinical/bullmq's workers, on a real redis-server with real BullMQ, when a sink or a call
 * misbehaves: odd throws, a sink that hangs past sinkTimeout or while its worker closes, and a
 * failure's text that names the person.
 */
import { Effect, Layer } from "effect"
import { ClinicalError, PersonData } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { createClinicalClient } from "effect-clinical/promise"
import { describe, expect, it } from "vitest"
import { expectNone } from "./support/Leaks.js"
import { enqueue, eventually, mock, queueOptions, status, useServers } from "./support/queueServers.js"
import { everything, persons } from "./support/queueWorkers.js"

useServers(persons)

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
