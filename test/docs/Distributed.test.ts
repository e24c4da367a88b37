/**
 * docs/distributed.md, run: its command-line session against a real redis-server and the mock on
 * loopback (the built executable, BullMQ and ioredis as installed), and the two worker programs the
 * page shows whole, imports included (examples/queue-worker.ts and queue-worker-promise.ts, copied
 * into the page by npm run docs:snippets), each run as a user runs it.
 */
import { Effect, Redacted } from "effect"
import { PersonData } from "effect-clinical"
import { ClinicalQueue } from "effect-clinical/bullmq"
import { MockClinicalServer } from "effect-clinical/testing"
import { Redis } from "ioredis"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import * as RedisServer from "../support/RedisServer.js"
import { binDirectory, runSession, session, shape } from "../support/Session.js"
import { spawnTsx } from "../support/tsxProgram.js"

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

  /**
   * Runs a worker example as the page says to (node --import tsx, the settings as variables) until it saved the
   * mock's three persons, then sends it SIGTERM; its exit and output.
   */
  const runWorker = (example: string) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawnTsx(example, {
        env: {
          PATH: process.env.PATH ?? "",
          CLINICAL_BASE_URL: mock.url,
          CLINICAL_APPLICATION_ID: mock.applicationId,
          CLINICAL_REDIS_URL: server.url,
          CLINICAL_SEALING_KEY: Redacted.value(sealingKey)
        }
      })
      const output = { stdout: "", stderr: "" }
      let signalled = false
      const timer = setTimeout(() => {
        child.kill("SIGKILL")
        reject(new Error(`${example} saved no three persons:\n${output.stdout}\n${output.stderr}`))
      }, 90_000)
      child.stdout.on("data", (chunk: Buffer) => {
        output.stdout += chunk.toString("utf8")
        if (!signalled && (output.stdout.match(/^saved #/gm) ?? []).length === 3) {
          signalled = true
          child.kill("SIGTERM")
        }
      })
      child.stderr.on("data", (chunk: Buffer) => (output.stderr += chunk.toString("utf8")))
      child.on("close", (code) => {
        clearTimeout(timer)
        resolve({ code, ...output })
      })
    })

  it.each([
    // SIGTERM interrupts the layer: the jobs in hand finished and the connections closed, then a clean exit.
    ["the Effect worker", "examples/queue-worker.ts"],
    // Everything closed by its SIGTERM handler: nothing keeps the process alive.
    ["the Promise worker", "examples/queue-worker-promise.ts"]
  ])("%s (%s), as pasted: each person saved, then stopped by SIGTERM", async (_, example) => {
    await enqueueAll()
    const ran = await runWorker(example!)
    expect(ran.stdout.trimEnd().split("\n").sort()).toEqual(
      mock.persons.map((person, i) => `saved #${i}: ${person.medications.length} item(s)`)
    )
    expect(ran.stderr).toBe("")
    expect(ran.code).toBe(0)
  }, 120_000)
})
