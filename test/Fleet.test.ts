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
  const library = JSON.stringify(Url.pathToFileURL(Path.join(root, "dist/src/index.js")).href)
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
  /** The fingerprint of the token its calls last succeeded with, and how many have (counted to 16). */
  readonly token: () => { readonly fingerprint: string; readonly calls: number } | undefined
  readonly report: Promise<Report>
}

const running: Array<ChildProcess> = []
afterEach(async () => {
  for (const child of running.splice(0)) child.kill("SIGKILL")
  await RedisServer.flushAll(redis.port)
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
    let token: { readonly fingerprint: string; readonly calls: number } | undefined
    const lines = Readline.createInterface({ input: child.stdout! })
    lines.on("line", (line) => {
      if (line === "ready") {
        resolve({ child, send: (text) => child.stdin!.write(`${text}\n`), token: () => token, report })
      } else if (line.startsWith("token ")) {
        const [, fingerprint, calls] = line.split(" ")
        token = { fingerprint: fingerprint!, calls: Number(calls) }
      } else if (line.startsWith("{")) resolveReport(JSON.parse(line) as Report)
    })
    child.once("exit", (code) => {
      if (code !== 0) reject(new Error(`worker ${index} exited with ${code}: ${stderr}`))
    })
  })

/** Waits until `condition` holds, checking every 20 ms; fails the test after `seconds` (never goes on as if it held). */
const until = async (condition: () => Promise<boolean> | boolean, seconds = 30) => {
  for (let i = 0; i < seconds * 50; i++) {
    if (await condition()) return
    await sleep(20)
  }
  throw new Error(`waited ${seconds} s for a condition that never held`)
}

/**
 * Whether every worker's calls now succeed with one token, other than `previous`, and have for 16
 * calls: four times its calls in flight, so that every call it had refused has been resent (sent
 * in order on its pool, they go before the sixteenth).
 */
const allOnOneNewToken = (workers: ReadonlyArray<Worker>, previous: string | undefined) => {
  const tokens = workers.map((worker) => worker.token())
  const fingerprint = tokens[0]?.fingerprint
  return fingerprint !== undefined && fingerprint !== previous &&
    tokens.every((token) => token?.fingerprint === fingerprint && token.calls >= 16)
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

/**
 * The store's timeout at 5 s, not its default 250 ms, where a test counts token requests: eight
 * processes on two busy cores (tsx compiling, 2,000 calls starting at once, the rest of the suite
 * beside them) can hold a Redis answer past 250 ms, and an instance whose read times out rightly
 * gets a token of its own (2 token requests, seen on Node 24 in CI). What these tests check is the
 * sharing and the wait for the first connection, not the timeout.
 */
const PATIENT_STORE = JSON.stringify({ timeout: "5 seconds" })

describe("a fleet of processes sharing one token through Redis", () => {
  it("8 processes x 250 concurrent calls on a cold store: exactly one token request", async () => {
    const mock = await MockClinicalServer.start()
    try {
      const workers = await fleet(8, baseEnv(mock, { CALLS: "250", CONCURRENCY: "250", STORE_SETTINGS: PATIENT_STORE }))
      for (const worker of workers) worker.send("go")
      const reports = await Promise.all(workers.map((worker) => worker.report))
      expect(reports.map((report) => report.succeeded)).toEqual(Array(8).fill(250))
      expect(reports.every((report) => Object.keys(report.failed).length === 0)).toBe(true)
      expect((await mock.counters()).tokenRequests).toBe(1)
    } finally {
      await mock.close()
    }
    // Eight processes that each compile with tsx: 16 s on a quiet machine, over 60 s beside the
    // examples' processes in a full run. It waits for their reports, never for a time.
  }, 180_000)

  /**
   * A fleet of 8 against a service that revokes a token when it issues the next, calling until
   * told to stop: what each process reports, how long the run took, and the token requests made.
   */
  const revokingFleet = async (
    mock: MockClinicalServer.Started,
    clientSettings: Record<string, string>,
    during: (workers: ReadonlyArray<Worker>) => Promise<void>
  ) => {
    const workers = await fleet(
      8,
      baseEnv(mock, {
        // Calls until told to stop: the run lasts as long as `during` needs, however fast the machine.
        CALLS: "0",
        CONCURRENCY: "4",
        CLIENT_SETTINGS: JSON.stringify(clientSettings),
        // As docs/scaling.md advises for a service that revokes on issue: a store slow to answer
        // (this machine is loaded) fails the refresh rather than fetching a token alone, which
        // would revoke the fleet's.
        STORE_SETTINGS: JSON.stringify({ onUnavailable: "fail", timeout: "2 seconds" })
      })
    )
    const started = Date.now()
    for (const worker of workers) worker.send("go")
    await during(workers)
    for (const worker of workers) worker.send("stop")
    const reports = await Promise.all(workers.map((worker) => worker.report))
    return { reports, elapsed: Date.now() - started, tokenRequests: (await mock.counters()).tokenRequests }
  }

  // Two tests, not one: a revocation that lands just after a refresh issued a token (two tokens
  // issued within one call, which is a refusal by design: one refresh per call) depended on timing
  // when both ran together, and failed calls on a busy machine. Apart, tokens are issued only by
  // what each test drives, seconds apart.
  it(
    "a service that revokes on issue, fleet-wide revocations: every call succeeds, one token request per revocation",
    async () => {
      // A lifetime longer than the run: tokens are issued only after the revocations.
      const mock = await MockClinicalServer.start({ revokeOnIssue: true, tokenLifetime: "10 minutes" })
      try {
        const revocations = 3
        const { elapsed, reports, tokenRequests } = await revokingFleet(mock, {}, async (workers) => {
          // Each revocation once every instance's calls succeed with the fleet's new token (an
          // event: a time after the token request was not enough on a busy machine, where an
          // instance still resending its refused calls met the next revocation too).
          let previous: string | undefined
          for (let i = 0; i <= revocations; i++) {
            await until(() => allOnOneNewToken(workers, previous))
            previous = workers[0]!.token()!.fingerprint
            if (i < revocations) await mock.revokeAllTokens()
          }
        })
        expect(reports.map((report) => report.failed)).toEqual(Array(8).fill({}))
        expect(reports.every((report) => report.succeeded > 0)).toBe(true)
        expect(tokenRequests).toBe(revocations + 1)
        console.log(`fleet: ${elapsed} ms, ${revocations} revocations, ${tokenRequests} token requests`)
      } finally {
        await mock.close()
      }
    },
    120_000
  )

  it(
    "a service that revokes on issue, several lifetimes: every call succeeds, one token request per lifetime, no ping-pong",
    async () => {
      // A call refused once is resent with the next token; it fails only if that one is revoked too
      // before the resend arrives. 4 s lifetimes (one every 3 s) left too little room on a machine
      // running the whole suite: a resend took longer, and 2 of 8 instances saw that twice.
      const lifetimeMillis = 6000
      const softWindowMillis = 1500
      const mock = await MockClinicalServer.start({ revokeOnIssue: true, tokenLifetime: lifetimeMillis })
      try {
        const lifetimes = 3
        const { elapsed, reports, tokenRequests } = await revokingFleet(mock, {
          softRefreshWindow: `${softWindowMillis} millis`,
          hardRefreshWindow: "500 millis"
        }, async () => {
          // Each refresh revokes the token before it: the fleet's calls in flight with it are
          // refused once, refresh, and go on. Over until the fleet has refreshed `lifetimes` times.
          await until(async () => (await mock.counters()).tokenRequests >= lifetimes + 1)
          await sleep(500)
        })
        expect(reports.map((report) => report.failed)).toEqual(Array(8).fill({}))
        expect(reports.every((report) => report.succeeded > 0)).toBe(true)
        // A token is refreshed once per usable lifetime (its lifetime less the soft window), fleet-wide.
        const usable = Math.ceil(elapsed / (lifetimeMillis - softWindowMillis))
        expect(tokenRequests).toBeLessThanOrEqual(usable + 1)
        console.log(`fleet: ${elapsed} ms, ${usable} lifetimes, ${tokenRequests} token requests`)
      } finally {
        await mock.close()
      }
    },
    120_000
  )

  it(
    "processes wired as the docs show, calling at start-up against an empty store: one token request (issue 23)",
    async () => {
      // Before the adapters waited for a client still connecting, each instance's first read failed
      // ("Stream isn't writeable"), and each fetched its own token: 8 processes, 8 token requests.
      const mock = await MockClinicalServer.start()
      try {
        const workers = await fleet(
          8,
          baseEnv(mock, {
            CALLS: "20",
            CONCURRENCY: "4",
            START_AT_ONCE: "1",
            STORE_SETTINGS: PATIENT_STORE
          })
        )
        const reports = await Promise.all(workers.map((worker) => worker.report))
        expect(reports.map((report) => report.succeeded)).toEqual(Array(8).fill(20))
        expect((await mock.counters()).tokenRequests).toBe(1)
      } finally {
        await mock.close()
      }
    },
    60_000
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
