/**
 * The queue's commands as users and attackers meet them, on a real redis-server (and a Redis that
 * never answers, and one that echoes what it refuses) against the mock over loopback, with the built
 * executable: a full disk under the shards, a silent Redis, a password in every place a URL can
 * hold one, a Redis written by someone else, SIGTERM mid-enqueue, and what `collect` says of who is
 * missing. The fleet of workers is test/QueueFleet.test.ts.
 */
import { Queue } from "bullmq"
import { Effect, Layer, Redacted } from "effect"
import { ClinicalClient, PersonData, TokenStore } from "effect-clinical"
import { ClinicalQueue } from "effect-clinical/bullmq"
import { MockClinicalServer } from "effect-clinical/testing"
import { Redis } from "ioredis"
import type { ChildProcess } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { unreachable } from "../src/cli/queueRedis.js"
import { run, settingsFor } from "./support/Cli.js"
import * as FakeRedis from "./support/FakeRedis.js"
import { expectNone } from "./support/Leaks.js"
import * as QueueWorker from "./support/QueueWorker.js"
import * as RedisServer from "./support/RedisServer.js"
import * as Tmpfs from "./support/Tmpfs.js"

const SEALING_KEY = "q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4="

const persons: Array<MockClinicalServer.MockPerson> = Array.from({ length: 400 }, (_, i) => ({
  ...MockClinicalServer.fixturePersons[i % 3]!,
  personUid: `Qc${i.toString(36).padStart(4, "0")}Tz8kLmWq${((i * 104729) % 999983).toString(36)}+Wp/x==`
}))

let redis: RedisServer.RedisServer
let mock: MockClinicalServer.Started
let dir: string
const children: Array<QueueWorker.Started> = []

beforeAll(async () => {
  dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "queue-cli-"))
  redis = await RedisServer.start()
  mock = await MockClinicalServer.start({ persons })
})
afterAll(async () => {
  await mock?.close()
  await redis?.stop()
  Fs.rmSync(dir, { recursive: true, force: true })
})
afterEach(async () => {
  for (const started of children.splice(0)) started.child.kill("SIGKILL")
  redis.resume()
  await RedisServer.flushAll(redis.port)
  await mock.clearFaults()
  await mock.resetCounters()
})

const env = (settings: Record<string, string> = {}) => ({
  ...settingsFor(mock.url, mock.applicationId),
  CLINICAL_REDIS_URL: redis.url,
  CLINICAL_SEALING_KEY: SEALING_KEY,
  ...settings
})

let files = 0
/** A persons file of the first `n` persons (and `more` lines after them). */
const personsFile = (n: number, more: ReadonlyArray<string> = []): string => {
  const file = Path.join(dir, `persons-${files++}.txt`)
  Fs.writeFileSync(file, [...persons.slice(0, n).map((person) => person.personUid), ...more].join("\n") + "\n")
  return file
}

const queue = (args: ReadonlyArray<string>, settings: Record<string, string> = {}, timeoutMillis = 60_000) =>
  run(["queue", ...args], { env: env(settings), timeoutMillis })

const enqueue = async (file: string, args: ReadonlyArray<string> = []) => {
  const ran = await queue(["enqueue", "medications", "--persons-file", file, ...args])
  expect(ran).toMatchObject({ code: 0, stderr: "" })
  return ran.stdout
}

const worker = (shards: string, args: ReadonlyArray<string> = [], settings: Record<string, string> = {}) => {
  const started = QueueWorker.start(env(settings), shards, args)
  children.push(started)
  return started
}

const statusJson = async (): Promise<Record<string, any>> =>
  JSON.parse((await queue(["status", "--json", "--sample", "0"])).stdout)

/** Waits until `check` holds, looking every 50 ms (the test's own timeout bounds the wait). */
const eventually = async (check: () => Promise<boolean> | boolean): Promise<void> => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 50))
}

let outs = 0
const collect = async (shards: string, args: ReadonlyArray<string> = [], settings: Record<string, string> = {}) => {
  const out = Path.join(dir, `collected-${outs++}.ndjson`)
  const ran = await queue(["collect", "--shards", shards, "--out", out, ...args], settings)
  const text = Fs.existsSync(out) ? Fs.readFileSync(out, "utf8") : ""
  return { ran, out, lines: text.trimEnd().split("\n").filter((line) => line !== "").map((line) => JSON.parse(line)) }
}

describe("a full disk under the shards", { timeout: 300_000 }, () => {
  it("results that do not land whole are retried once space returns: every person once, no unreadable line", async () => {
    const disk = Tmpfs.mount(512)
    try {
      await enqueue(personsFile(300), ["--attempts", "20"])
      const shards = Path.join(disk.path, "shards")
      // About 30 results' worth of space: the disk fills early in the run.
      disk.fill(8 * 1024)
      const started = worker(shards)
      // Once a worker has said it cannot write, the space comes back.
      await eventually(() => /ENOSPC/.test(started.stderr()))
      disk.free()
      const exit = await started.exited
      expect(exit.code).toBe(0)
      // Its own count says the same: a line the disk refused was no person done.
      expect(exit.stderr).toMatch(
        /queue work: 300 done, 0 failed here in (\d+ ms|\d+\.\d s|\d+ min \d+ s) \(\d+\.\d\/s\); run 1: 300 done, 0 failed of 300( \(\d+\.\d\/s\))?; .*peak memory/
      )
      const { lines, ran } = await collect(shards)
      expect(ran.stdout).toContain("collected 300 of 300 persons of run 1")
      expect(ran.stdout).toContain("0 missing")
      expect(ran.stdout).toContain("0 unreadable line(s)")
      expect(ran.code).toBe(0)
      expect(lines.map((line) => line.index)).toEqual(Array.from({ length: 300 }, (_, i) => i))
      expect(lines.every((line) => line.outcome === "Success")).toBe(true)
      // The run's count says the same: a result that did not land was not counted done.
      expect((await statusJson()).run).toMatchObject({ done: 300, failed: 0 })
      // Each shard holds whole lines only.
      for (const name of Fs.readdirSync(shards)) {
        const text = Fs.readFileSync(Path.join(shards, name), "utf8")
        expect(text.endsWith("\n") || text === "").toBe(true)
        for (const line of text.trimEnd().split("\n").filter((each) => each !== "")) {
          expect(() => JSON.parse(line)).not.toThrow()
        }
      }
    } finally {
      disk.unmount()
    }
  })
})

/**
 * Runs each one-off command side by side (each takes its 10 s) against `fake`, closed after: each
 * exits 1 saying it cannot reach Redis, which did not answer within 10 s.
 */
const eachGivesUp = async (fake: FakeRedis.FakeRedis, commands: ReadonlyArray<ReadonlyArray<string>>) => {
  try {
    const url = `redis://127.0.0.1:${fake.port}`
    const ran = await Promise.all(commands.map((args) => queue(args, { CLINICAL_REDIS_URL: url })))
    for (const [i, each] of ran.entries()) {
      expect([commands[i]![0], each.code, each.stderr]).toEqual([
        commands[i]![0],
        1,
        expect.stringContaining(`cannot reach Redis at ${url}: it did not answer within 10 s`)
      ])
    }
  } finally {
    await fake.close()
  }
}

describe("a Redis that never answers", { timeout: 300_000 }, () => {
  it("every one-off command gives up within its bound and says so", async () => {
    Fs.mkdirSync(Path.join(dir, "no-shards"), { recursive: true })
    await eachGivesUp(await FakeRedis.silent(), [
      ["status", "--sample", "0"],
      ["enqueue", "medications", "--persons-file", personsFile(3)],
      ["retry-failed"],
      ["resume"],
      ["collect", "--shards", Path.join(dir, "no-shards"), "--out", Path.join(dir, "never.ndjson")]
    ])
  })

  it("a Redis that answers PING and then nothing: every one-off command still gives up within its bound", async () => {
    await eachGivesUp(await FakeRedis.answeringPingOnly(), [["status", "--sample", "0"], ["retry-failed"], ["resume"]])
  })

  // ioredis's and ClinicalQueue's own words for a Redis out of reach (ioredis/built: Command.js,
  // redis/event_handler.js, utils), whichever of two bounds of the same length fires first.
  it.each([
    ["Command timed out", "it did not answer within 10 s"],
    ["Redis did not answer within 10 s", "it did not answer within 10 s"],
    ["Command aborted due to connection close", "the connection failed"],
    ["Connection is closed.", "the connection failed"],
    ["connect ECONNREFUSED 127.0.0.1:6379", "the connection failed"],
    ["read ECONNRESET", "the connection failed"],
    ["getaddrinfo ENOTFOUND redis.internal", "the connection failed"],
    ["connect ETIMEDOUT 10.0.0.7:6379", "the connection failed"],
    ["connect EHOSTUNREACH 10.0.0.7:6379", "the connection failed"],
    ["WRONGPASS invalid username-password pair or user is disabled.", undefined],
    ["OOM command not allowed when used memory > 'maxmemory'.", undefined]
  ])("a Redis error saying %j reads as: %s", (detail, why) => {
    expect(unreachable(new ClinicalQueue.QueueError({ operation: "enqueue", detail }))).toBe(why)
  })

  it("a Redis stopped (SIGSTOP) after it answered: queue status gives up too", async () => {
    await enqueue(personsFile(3))
    redis.pause()
    const ran = await queue(["status", "--sample", "0"])
    redis.resume()
    expect(ran).toMatchObject({ code: 1, stderr: expect.stringContaining("did not answer within 10 s") })
  })
})

describe("the Redis URL's secrets", { timeout: 300_000 }, () => {
  const password = "S3cret-Redis-Pw"

  it("the password, in the URL or its query, is never shown: the banner shows scheme, host, port and db", async () => {
    await enqueue(personsFile(3))
    const guarded = await RedisServer.start()
    const admin = new Redis(guarded.port, "127.0.0.1")
    await admin.config("SET", "requirepass", password)
    await admin.quit()
    try {
      const inQuery = `redis://127.0.0.1:${guarded.port}/0?password=${password}`
      const inUrl = `redis://:${password}@127.0.0.1:${guarded.port}/0`
      const enqueued = await queue(["enqueue", "medications", "--persons-file", personsFile(3)], {
        CLINICAL_REDIS_URL: inQuery
      })
      expect(enqueued.code).toBe(0)
      const shards = Path.join(dir, "shards-password")
      const byQuery = await worker(shards, [], { CLINICAL_REDIS_URL: inQuery }).exited
      const byUrl = await worker(shards, [], { CLINICAL_REDIS_URL: inUrl }).exited
      expect(byQuery.stderr).toContain(`Redis redis://127.0.0.1:${guarded.port}/0\n`)
      expect(byUrl.stderr).toContain(`Redis redis://127.0.0.1:${guarded.port}/0\n`)
      const unreachable = await queue(["status", "--sample", "0"], {
        CLINICAL_REDIS_URL: `redis://127.0.0.1:1/?password=${password}`
      })
      expect(unreachable).toMatchObject({
        code: 1,
        stderr: expect.stringContaining("cannot reach Redis at redis://127.0.0.1:1:")
      })
      const wrong = await queue(["status", "--sample", "0"], {
        CLINICAL_REDIS_URL: `redis://:${password}x@127.0.0.1:${guarded.port}`
      })
      expect(wrong.code).toBe(1)
      const malformed = await queue(["status"], { CLINICAL_REDIS_URL: `redis://:${password}%zz@127.0.0.1:1` })
      expect(malformed).toMatchObject({ code: 2, stderr: expect.stringContaining("CLINICAL_REDIS_URL must be") })
      for (const ran of [enqueued, unreachable, wrong, malformed]) {
        expectNone("the output", ran.stdout + ran.stderr, [password])
      }
      for (const exit of [byQuery, byUrl]) expectNone("stderr", exit.stderr, [password])
    } finally {
      await guarded.stop()
    }
  })

  it("a server that repeats the command it refuses (AUTH's password included): the password never reaches the terminal", async () => {
    const echoing = await FakeRedis.echoing()
    try {
      for (
        const url of [
          `redis://:${password}@127.0.0.1:${echoing.port}`,
          `redis://127.0.0.1:${echoing.port}/?password=${password}`
        ]
      ) {
        const ran = await queue(["status", "--sample", "0"], { CLINICAL_REDIS_URL: url })
        expect(ran.code).toBe(1)
        // What it said is shown, scrubbed: the refusal reached the user.
        expect(ran.stderr).toMatch(/refused AUTH|<redacted>/)
        expectNone("the output", ran.stdout + ran.stderr, [password])
        // queue work's start too (from review: it was told outside the other commands' scrubbing).
        const work = await worker(Path.join(dir, "shards-echo"), [], { CLINICAL_REDIS_URL: url }).exited
        expect(work.code).not.toBe(0)
        expectNone("queue work's output", work.stderr, [password])
      }
    } finally {
      await echoing.close()
    }
  })
})

describe("what the queue records, written by someone else", { timeout: 300_000 }, () => {
  it("a failure kind planted in Redis reaches the terminal printable: no escape, bell or line break", async () => {
    await enqueue(personsFile(1, ["UnknownPerson00000000000000000=="]), ["--attempts", "1"])
    await worker(Path.join(dir, "shards-planted")).exited
    const admin = new Redis(redis.port, "127.0.0.1")
    const failedId = (await admin.zrange("bull:effect-clinical:failed", 0, 0))[0]!
    await admin.hset(
      `bull:effect-clinical:${failedId}`,
      "failedReason",
      "\u001b]0;owned\u0007Evil\r\nqueue: 0\u001b[2J: x"
    )
    await admin.quit()
    const table = await queue(["status", "--sample", "0"])
    expect(table.code).toBe(0)
    expect(table.stdout).toContain("Evil")
    expect(table.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/)
    expect(table.stdout.split("\n").filter((line) => line.includes("Evil"))).toHaveLength(1)
    const json = await queue(["status", "--json", "--sample", "0"])
    expect(json.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/)
  })

  it("a forged record of the queue's operation: the workers read what each job was sealed for", async () => {
    await enqueue(personsFile(3))
    const admin = new Redis(redis.port, "127.0.0.1")
    await admin.hset("bull:effect-clinical:effect-clinical", "operation", "ethnicities")
    await admin.quit()
    const shards = Path.join(dir, "shards-forged")
    expect(await worker(shards).exited).toMatchObject({ code: 0 })
    const requested = (await mock.requestLog()).map((entry) => entry.operation).filter((op) => op !== "token")
    expect(requested).toEqual(["medications", "medications", "medications"])
    const { lines } = await collect(shards)
    expect(lines.map((line) => line.operation)).toEqual(["medications", "medications", "medications"])
  })
})

describe("enqueue", { timeout: 300_000 }, () => {
  it("the date range is part of the input: the same file with another range is another run", async () => {
    const file = personsFile(4)
    expect(await enqueue(file)).toContain("(run 1): 4 added")
    expect(await enqueue(file)).toContain("(run 1): 0 added, 4 already there")
    expect(await enqueue(file, ["--start-date", "2024-01-01"])).toContain("(run 2): 4 added")
    expect(await enqueue(file, ["--start-date", "2024-01-01"])).toContain("(run 2): 0 added")
    expect(await enqueue(file, ["--again"])).toContain("(run 3): 4 added")
  })

  it("--max-waiting into a paused queue: refused at once, saying why, its lock given back", async () => {
    await enqueue(personsFile(3))
    const admin = new Redis(redis.port, "127.0.0.1", { maxRetriesPerRequest: null })
    const bull = new Queue("effect-clinical", { connection: admin })
    await bull.pause()
    const refused = await queue([
      "enqueue",
      "medications",
      "--persons-file",
      personsFile(6),
      "--again",
      "--max-waiting",
      "3"
    ])
    expect(refused).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/the queue is paused: its 3 waiting jobs do not move until it is resumed/)
    })
    expect(await admin.exists("bull:effect-clinical:effect-clinical:enqueuing")).toBe(0)
    await bull.close()
    await admin.quit()
  })

  /**
   * `queue enqueue` of a file of 60,000 persons, with `midway` called once its first jobs are in
   * Redis (the child and a connection to Redis given); the run, and that connection.
   */
  const enqueueInterrupted = async (name: string, midway: (child: ChildProcess, admin: Redis) => unknown) => {
    const big = Path.join(dir, `${name}.txt`)
    Fs.writeFileSync(
      big,
      Array.from({ length: 60_000 }, (_, i) => `${name}${i}PersonUid0000000000==`).join("\n") + "\n"
    )
    const admin = new Redis(redis.port, "127.0.0.1")
    admin.on("error", () => {})
    const ran = await run(["queue", "enqueue", "medications", "--persons-file", big], {
      env: env(),
      timeoutMillis: 120_000,
      started: (child) => {
        void eventually(async () => Number(await admin.llen("bull:effect-clinical:wait").catch(() => 0)) > 0).then(
          () => midway(child, admin)
        )
      }
    })
    return { ran, admin, big }
  }

  it("SIGTERM mid-enqueue: it stops at once (exit 130) and gives the enqueue lock back", async () => {
    const { admin, big, ran } = await enqueueInterrupted("Big", (child) => child.kill("SIGTERM"))
    expect(ran.code).toBe(130)
    expect(await admin.exists("bull:effect-clinical:effect-clinical:enqueuing")).toBe(0)
    expect(Number(await admin.llen("bull:effect-clinical:wait"))).toBeLessThan(60_000)
    await admin.quit()
    // The next enqueue of the file goes on at once, where that one stopped.
    const resumed = await queue(["enqueue", "medications", "--persons-file", big], {}, 120_000)
    expect(resumed).toMatchObject({ code: 0, stdout: expect.stringContaining("enqueued 60000 persons") })
  })

  it("Redis gone mid-enqueue: says it cannot reach Redis, not BullMQ's words", async () => {
    const { ran } = await enqueueInterrupted("Gone", (_, admin) => {
      admin.disconnect()
      return redis.kill()
    })
    await redis.restart()
    expect(ran).toMatchObject({ code: 1, stderr: expect.stringContaining(`cannot reach Redis at ${redis.url}`) })
    expect(ran.stderr).not.toMatch(/Command aborted|Connection is closed/)
  })
})

describe("work", { timeout: 300_000 }, () => {
  it("--until-empty waits for a person whose job is retrying (delayed) after a failure", async () => {
    await enqueue(personsFile(2))
    // Person 0's first two reads fail (the client's own retries off): BullMQ retries it 1 s, then 2 s later.
    await mock.injectFaults("medications", [MockClinicalServer.Fault.status(500), MockClinicalServer.Fault.status(500)])
    const shards = Path.join(dir, "shards-delayed")
    const exit = await worker(shards, [], { CLINICAL_MAX_RETRIES: "0" }).exited
    expect(exit.code).toBe(0)
    const { lines, ran } = await collect(shards)
    expect(ran.code).toBe(0)
    expect(lines.map((line) => [line.index, line.outcome])).toEqual([[0, "Success"], [1, "Success"]])
  })

  it("--until-empty waits while an enqueue is still adding jobs, even when the queue runs dry meanwhile", async () => {
    // The enqueue adds 400 persons 40 at a time (it waits for room each second): the worker drains each batch at once.
    const enqueuing = queue(
      ["enqueue", "medications", "--persons-file", personsFile(400), "--max-waiting", "40"],
      {},
      120_000
    )
    const admin = new Redis(redis.port, "127.0.0.1")
    await eventually(async () => (await admin.exists("bull:effect-clinical:effect-clinical:enqueuing")) === 1)
    await admin.quit()
    const shards = Path.join(dir, "shards-enqueuing")
    const exit = await worker(shards).exited
    expect((await enqueuing).code).toBe(0)
    expect(exit.code).toBe(0)
    const { lines, ran } = await collect(shards)
    expect(ran.code).toBe(0)
    expect(lines).toHaveLength(400)
  })

  it("a shards directory that cannot be written is refused at start, before any job is taken", async () => {
    await enqueue(personsFile(2))
    const file = Path.join(dir, "a-file")
    Fs.writeFileSync(file, "")
    const exit = await worker(Path.join(file, "shards")).exited
    expect(exit).toMatchObject({ code: 2, stderr: expect.stringContaining("cannot write a shard in") })
    expect((await mock.counters()).medicationRequests).toBe(0)
  })

  it("shares its token under a key an application can derive: an application's client joins the fleet's token", async () => {
    await enqueue(personsFile(2))
    expect(await worker(Path.join(dir, "shards-token")).exited).toMatchObject({ code: 0 })
    expect((await mock.counters()).tokenRequests).toBe(1)
    const connection = new Redis(redis.port, "127.0.0.1")
    // Derived as docs/distributed.md says: HKDF-SHA256, no salt, the purpose as info, 32 bytes.
    const key = Redacted.make(
      new Uint8Array(
        Crypto.hkdfSync(
          "sha256",
          Buffer.from(SEALING_KEY, "base64"),
          new Uint8Array(0),
          "effect-clinical token store",
          32
        )
      )
    )
    await Effect.runPromise(
      PersonData.get(PersonData.medications, persons[0]!.personUid).pipe(
        Effect.provide(
          ClinicalClient.layerUndici({ baseUrl: mock.url, applicationId: mock.applicationId }).pipe(
            Layer.provide(TokenStore.layerRedis({ redis: TokenStore.ioredis(connection), sealingKey: key }))
          )
        )
      )
    )
    await connection.quit()
    expect((await mock.counters()).tokenRequests).toBe(1)
  })
})

describe("collect", { timeout: 300_000 }, () => {
  it("knows how many persons the run enqueued: the last ones missing too; exits 3 saying how many", async () => {
    await enqueue(personsFile(5))
    const shards = Path.join(dir, "shards-missing")
    expect(await worker(shards).exited).toMatchObject({ code: 0 })
    // The last two persons' lines never reached this directory (another machine's shard not copied).
    const [name] = Fs.readdirSync(shards)
    const file = Path.join(shards, name!)
    const kept = Fs.readFileSync(file, "utf8").trimEnd().split("\n").filter((line) => !/"index":[34],/.test(line))
    Fs.writeFileSync(file, kept.join("\n") + "\n")
    const { lines, ran } = await collect(shards)
    expect(lines.map((line) => line.index)).toEqual([0, 1, 2])
    expect(ran.stdout).toContain("collected 3 of 5 persons of run 1 (medications)")
    expect(ran).toMatchObject({ code: 3, stderr: expect.stringContaining("2 of 5 persons are missing") })
    // Without Redis, given the run and its size.
    const offline = await collect(shards, ["--run", "1", "--persons", "5"], {
      CLINICAL_REDIS_URL: "redis://127.0.0.1:1"
    })
    expect(offline.ran).toMatchObject({ code: 3, stdout: expect.stringContaining("collected 3 of 5 persons of run 1") })
  })

  it("two queues writing to one shards directory: each collects its own run alone", async () => {
    const file = personsFile(3)
    for (const name of ["cohort1", "cohort2"]) {
      const ran = await queue(["enqueue", "medications", "--persons-file", file, "--queue", name])
      expect(ran.code).toBe(0)
    }
    const shards = Path.join(dir, "shards-shared")
    // Only cohort2's worker ran.
    expect(await worker(shards, ["--queue", "cohort2"]).exited).toMatchObject({ code: 0 })
    const first = await collect(shards, ["--queue", "cohort1"])
    expect(first.lines).toEqual([])
    expect(first.ran).toMatchObject({ code: 3, stderr: expect.stringContaining("3 of 3 persons are missing") })
    const second = await collect(shards, ["--queue", "cohort2"])
    expect(second.ran.code).toBe(0)
    expect(second.lines).toHaveLength(3)
  })

  it("lines past the run's size given (or recorded): not a whole run, exit 3 saying so", async () => {
    await enqueue(personsFile(5))
    const shards = Path.join(dir, "shards-beyond")
    expect(await worker(shards).exited).toMatchObject({ code: 0 })
    const { lines, ran } = await collect(shards, ["--run", "1", "--persons", "2"], {
      CLINICAL_REDIS_URL: "redis://127.0.0.1:1"
    })
    expect(lines).toHaveLength(2)
    expect(ran.stdout).toContain("3 past the run's size")
    expect(ran).toMatchObject({ code: 3, stderr: expect.stringContaining("3 lines of the run name positions past") })
  })

  it("SIGTERM mid-merge: it stops (exit 130) and leaves no merged file behind", async () => {
    const shards = Path.join(dir, "shards-big")
    Fs.mkdirSync(shards)
    const line = (index: number) =>
      `{"index":${index},"outcome":"Success","operation":"medications","items":[{"Name":"${"x".repeat(100)}"}]}\n`
    const chunks: Array<string> = []
    for (let index = 0; index < 600_000; index++) chunks.push(line(index))
    Fs.writeFileSync(Path.join(shards, "effect-clinical.run-1-0123456789abcdef.here.ndjson"), chunks.join(""))
    const out = Path.join(dir, "merged-big.ndjson")
    const ran = await run(
      ["queue", "collect", "--shards", shards, "--out", out, "--run", "1", "--persons", "600000"],
      {
        env: env({ CLINICAL_REDIS_URL: "redis://127.0.0.1:1" }),
        timeoutMillis: 120_000,
        started: (child) => {
          void eventually(() => Fs.existsSync(out)).then(() => child.kill("SIGTERM"))
        }
      }
    )
    expect(ran.code).toBe(130)
    expect(Fs.existsSync(out)).toBe(false)
  })

  it("--out in a directory that does not exist is named as --out", async () => {
    await enqueue(personsFile(1))
    const shards = Path.join(dir, "shards-out")
    expect(await worker(shards).exited).toMatchObject({ code: 0 })
    const ran = await queue(["collect", "--shards", shards, "--out", Path.join(dir, "nowhere", "out.ndjson")])
    expect(ran.code).toBe(2)
    expect(ran.stderr).toContain("cannot write")
    expect(ran.stderr).toContain("nowhere")
    expect(ran.stderr).not.toContain("cannot collect")
  })
})

describe("help", { timeout: 120_000 }, () => {
  it("each queue command's help shows its whole path", async () => {
    for (const command of ["enqueue", "work", "status", "collect", "retry-failed", "resume"]) {
      const ran = await run(["queue", command, "--help"])
      expect([command, ran.code]).toEqual([command, 0])
      expect(ran.stdout).toContain(`effect-clinical queue ${command}`)
      expect(ran.stdout).not.toMatch(new RegExp(`effect-clinical ${command}\\b`))
    }
  })
})

describe("a CLINICAL_SEALING_KEY that is not the queue's (issue 50)", { timeout: 120_000 }, () => {
  const OTHER_KEY = "Zx8c7v6b5n4m3a2s1d0fGhJkLqWeRtYuIoPaSdFgHjK="
  const refusal =
    "error: CLINICAL_SEALING_KEY does not open the records of the queue \"effect-clinical\": it is not the key the queue was " +
    "filled with, and every process of a queue needs the same key\n"

  it("enqueue, status, work, collect, retry-failed, resume and the dashboard each say so, exit 5, print no key and change nothing", async () => {
    await enqueue(personsFile(3))
    const before = await statusJson()
    const shards = Path.join(dir, `shards-key-${outs++}`)
    const wrong = { CLINICAL_SEALING_KEY: OTHER_KEY }
    // collect's shards exist (the workers wrote them), but the run to merge is read from Redis.
    const existing = Fs.mkdtempSync(Path.join(dir, "shards-"))
    const commands: ReadonlyArray<ReadonlyArray<string>> = [
      ["enqueue", "medications", "--persons-file", personsFile(5)],
      ["status"],
      ["status", "--json"],
      ["work", "--shards", shards, "--until-empty"],
      ["collect", "--shards", existing, "--out", Path.join(dir, `collected-key-${outs++}.ndjson`)],
      ["retry-failed"],
      ["resume"],
      ["dashboard", "--port", "0"]
    ]
    for (const command of commands) {
      const ran = await queue(command, wrong)
      expect({ command, code: ran.code, stdout: ran.stdout, stderr: ran.stderr }).toEqual({
        command,
        code: 5,
        stdout: "",
        stderr: refusal
      })
      expectNone(command.join(" "), ran.stdout + ran.stderr, [SEALING_KEY, OTHER_KEY])
    }
    // Nothing was read, put back or resumed: the queue stands as it did.
    expect(await statusJson()).toEqual(before)
    expect(Fs.existsSync(shards) ? Fs.readdirSync(shards) : []).toEqual([])
  })
})
