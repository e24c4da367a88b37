/**
 * A fleet: separate Node processes (test/support/fleetWorker.ts), each with its own client and its
 * own Redis connection (half ioredis, half node-redis), sharing one token through a real
 * redis-server, against the mock served over loopback. What is counted is what the mock saw.
 */
import { MockClinicalServer } from "effect-clinical/testing"
import { Redis } from "ioredis"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Readline from "node:readline"
import * as Url from "node:url"
import Ts from "typescript"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import * as RedisServer from "./support/RedisServer.js"

const root = Path.resolve(import.meta.dirname, "..")

let redis: RedisServer.RedisServer
/** The worker, transpiled once to plain JavaScript (tsx would cost every process its start-up). */
let worker: string
beforeAll(async () => {
  redis = await RedisServer.start()
  const source = Fs.readFileSync(Path.join(root, "test/support/fleetWorker.ts"), "utf8")
  const { outputText } = Ts.transpileModule(source, {
    compilerOptions: { module: Ts.ModuleKind.ESNext, target: Ts.ScriptTarget.ES2022 }
  })
  // Under this package's node_modules, where ioredis and redis resolve; the library as built, by its path.
  const directory = Path.join(root, "node_modules/.cache/effect-clinical-tests")
  Fs.mkdirSync(directory, { recursive: true })
  worker = Path.join(directory, "fleetWorker.mjs")
  const library = JSON.stringify(Url.pathToFileURL(Path.join(root, "dist/index.js")).href)
  Fs.writeFileSync(worker, outputText.replace(/from "effect-clinical"/, `from ${library}`))
})
afterAll(async () => {
  await redis?.stop()
})

interface Report {
  readonly succeeded: number
  readonly failed: Readonly<Record<string, number>>
  /** The token the instance ended with, by fingerprint; and where it came from. */
  readonly fingerprint: string
  readonly source: "server" | "store"
}

interface Worker {
  readonly child: ChildProcess
  readonly send: (line: string) => void
  readonly report: Promise<Report>
}

const running: Array<ChildProcess> = []
afterEach(async () => {
  for (const child of running.splice(0)) child.kill("SIGKILL")
  const admin = new Redis(redis.port, "127.0.0.1")
  await admin.flushall()
  admin.disconnect()
})

/** Starts one instance and resolves once it is connected and waiting for `go`. */
const startWorker = (index: number, env: Record<string, string>): Promise<Worker> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [worker], {
      cwd: root,
      env: {
        ...process.env,
        REDIS_PORT: String(redis.port),
        REDIS_CLIENT: index % 2 === 0 ? "ioredis" : "node-redis",
        ...env
      },
      stdio: ["pipe", "pipe", "pipe"]
    })
    running.push(child)
    let stderr = ""
    child.stderr!.on("data", (chunk) => (stderr += chunk))
    let resolveReport: (report: Report) => void
    const report = new Promise<Report>((res) => (resolveReport = res))
    const lines = Readline.createInterface({ input: child.stdout! })
    lines.on("line", (line) => {
      if (line === "ready") resolve({ child, send: (text) => child.stdin!.write(`${text}\n`), report })
      else if (line.startsWith("{")) resolveReport(JSON.parse(line) as Report)
    })
    child.once("exit", (code) => {
      if (code !== 0) reject(new Error(`worker ${index} exited with ${code}: ${stderr}`))
    })
  })

/** Waits until `condition` holds, checking every 20 ms, for at most 10 s. */
const until = async (condition: () => Promise<boolean>) => {
  for (let i = 0; i < 500 && !(await condition()); i++) await sleep(20)
}

/** `count` instances, ready; `go` is sent to all at once by the caller. */
const fleet = (count: number, env: Record<string, string>) =>
  Promise.all(Array.from({ length: count }, (_, i) => startWorker(i, env)))

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

const baseEnv = (mock: MockClinicalServer.Started, extra: Record<string, string>) => ({
  MOCK_URL: mock.url,
  APPLICATION_ID: mock.applicationId,
  PERSON_UIDS: mock.persons.map((person) => person.personUid).join(","),
  ...extra
})

describe("a fleet of processes sharing one token through Redis", () => {
  it("8 processes x 250 concurrent calls on a cold store: exactly one token request", async () => {
    const mock = await MockClinicalServer.start()
    try {
      const workers = await fleet(8, baseEnv(mock, { CALLS: "250", CONCURRENCY: "250" }))
      for (const worker of workers) worker.send("go")
      const reports = await Promise.all(workers.map((worker) => worker.report))
      expect(reports.map((report) => report.succeeded)).toEqual(Array(8).fill(250))
      expect(reports.every((report) => Object.keys(report.failed).length === 0)).toBe(true)
      expect((await mock.counters()).tokenRequests).toBe(1)
    } finally {
      await mock.close()
    }
  }, 60_000)

  it(
    "a service that revokes on issue, fleet-wide revocations, several lifetimes: every call succeeds, no ping-pong",
    async () => {
      const lifetimeMillis = 4000
      const softWindowMillis = 1000
      const mock = await MockClinicalServer.start({ revokeOnIssue: true, tokenLifetime: lifetimeMillis })
      try {
        const workers = await fleet(
          8,
          baseEnv(mock, {
            // Calls until told to stop: the run lasts as long as its revocations need, however
            // fast the machine (a fixed number of calls took 27 s on one run and under 6 on another).
            CALLS: "0",
            CONCURRENCY: "4",
            CLIENT_SETTINGS: JSON.stringify({
              softRefreshWindow: `${softWindowMillis} millis`,
              hardRefreshWindow: "500 millis"
            }),
            // As docs/scaling.md advises for a service that revokes on issue: a store slow to answer
            // (this machine is loaded) fails the refresh rather than fetching a token alone, which
            // would revoke the fleet's.
            STORE_SETTINGS: JSON.stringify({ onUnavailable: "fail", timeout: "2 seconds" })
          })
        )
        const started = Date.now()
        for (const worker of workers) worker.send("go")
        // Three revocations 4.5 s apart: a refresh comes 3 s after a token is issued, so a
        // revocation lands 1.5 s after a refresh, and a refresh 3 s after a revocation: far from
        // the moment (a call's refresh and resend, slower on a loaded machine) where a call could
        // meet two refusals in a row, which is an error by design (one refresh per call). The
        // calls stop 1.5 s after the last one: 15 s, five usable lifetimes.
        const revocations = 3
        for (let i = 0; i < revocations; i++) {
          await sleep(4500)
          await mock.revokeAllTokens()
        }
        await sleep(1500)
        for (const worker of workers) worker.send("stop")
        const all = await Promise.all(workers.map((worker) => worker.report))
        const elapsed = Date.now() - started
        const succeeded = all.reduce((sum, report) => sum + report.succeeded, 0)
        expect(all.map((report) => report.failed)).toEqual(Array(8).fill({}))
        expect(all.every((report) => report.succeeded > 0)).toBe(true)
        // A token is refreshed once per usable lifetime (its lifetime less the soft window).
        const lifetimes = Math.ceil(elapsed / (lifetimeMillis - softWindowMillis))
        const { tokenRequests } = await mock.counters()
        expect(tokenRequests).toBeLessThanOrEqual(revocations + lifetimes + 1)
        console.log(
          `fleet: ${succeeded} calls in ${elapsed} ms, ${revocations} revocations, ${lifetimes} lifetimes, ${tokenRequests} token requests`
        )
      } finally {
        await mock.close()
      }
    },
    120_000
  )

  it(
    "a leaseholder paused past its lease (between its token and its publication) publishes late, loses to the newer token, and takes it",
    async () => {
      const mock = await MockClinicalServer.start()
      try {
        // A 300 ms token timeout: leases of 300 + 2 x 250 + 1,000 ms.
        const env = baseEnv(mock, {
          CALLS: "1",
          CONCURRENCY: "1",
          CLIENT_SETTINGS: JSON.stringify({ tokenTimeout: "300 millis" })
        })
        const [paused, other] = await Promise.all([
          startWorker(0, { ...env, PAUSE_AFTER_TOKEN: "1" }),
          startWorker(1, env)
        ])
        paused.send("go")
        await until(async () => (await mock.counters()).tokenRequests === 1)
        await sleep(2000) // past the paused one's lease
        other.send("go")
        const newer = await other.report
        expect(newer).toMatchObject({ succeeded: 1, source: "server" })
        expect((await mock.counters()).tokenRequests).toBe(2)
        paused.send("publish")
        const late = await paused.report
        expect(late).toMatchObject({ succeeded: 1, source: "store", fingerprint: newer.fingerprint })
        // The store holds the newer token: the late publication changed nothing.
        const admin = new Redis(redis.port, "127.0.0.1")
        const [name] = await admin.keys("*:token")
        expect((await admin.get(name!))!.slice(0, 32)).toBe(newer.fingerprint)
        expect(await admin.get(name!.replace(/:token$/, ":generation"))).toBe("1")
        admin.disconnect()
        expect((await mock.counters()).tokenRequests).toBe(2)
      } finally {
        await mock.close()
      }
    },
    60_000
  )

  it("Redis killed mid-run: calls go on succeeding alone, and sharing resumes when Redis is back", async () => {
    const mock = await MockClinicalServer.start()
    try {
      const workers = await fleet(
        4,
        baseEnv(mock, { CALLS: "0", CONCURRENCY: "2", STORE_SETTINGS: JSON.stringify({ retryAfter: "500 millis" }) })
      )
      for (const worker of workers) worker.send("go")
      await sleep(500)
      expect((await mock.counters()).tokenRequests).toBe(1)

      await redis.kill()
      const beforeOutage = (await mock.counters()).tokenRequests
      await mock.revokeAllTokens()
      await sleep(1000)
      const alone = (await mock.counters()).tokenRequests - beforeOutage
      // Each instance asked for its own token (none could share).
      expect(alone).toBeGreaterThan(1)
      expect(alone).toBeLessThanOrEqual(4)

      await redis.restart()
      // Every instance is connected again, and past its pause.
      const admin = new Redis(redis.port, "127.0.0.1")
      for (let i = 0; i < 100; i++) {
        const clients = ((await admin.call("CLIENT", "LIST")) as string).trim().split("\n").length
        if (clients >= 5) break
        await sleep(100)
      }
      admin.disconnect()
      await sleep(1000)
      const beforeRevocation = (await mock.counters()).tokenRequests
      await mock.revokeAllTokens()
      await sleep(1000)
      expect((await mock.counters()).tokenRequests - beforeRevocation).toBe(1)

      for (const worker of workers) worker.send("stop")
      const reports = await Promise.all(workers.map((worker) => worker.report))
      expect(reports.map((report) => report.failed)).toEqual(Array(4).fill({}))
      expect(reports.every((report) => report.succeeded > 0)).toBe(true)
    } finally {
      await mock.close()
    }
  }, 120_000)
})
