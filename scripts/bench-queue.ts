/**
 * The queue's scale figures (docs/benchmarks.md): persons per second with 1, 2 and 4 `queue work`
 * processes against a service of fixed capacity (scripts/load/capacityServer.ts: K requests at
 * once, 20 ms each, 429 beyond), beside the single-process `batch` on the same work, in rounds that
 * alternate the order; Redis commands per person (INFO commandstats: those BullMQ's scripts run included);
 * each worker's peak memory.
 *
 *   npm run bench:queue -- [--persons 8000] [--capacity 32] [--rounds 2] [--worker-args "--lock-duration 30"] [--commands]
 *
 * `--worker-args`: more arguments for every `queue work` (BullMQ's own timings, `--lock-duration 30
 * --stalled-interval 30`, against the defaults, say: their Redis commands per person). `--commands`:
 * each Redis command's calls per person in each queue run.
 *
 * The executable as built (`dist/`), BullMQ and ioredis as installed, a redis-server of its own.
 */
import { Redis } from "ioredis"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Readline from "node:readline"
import * as RedisServer from "../test/support/RedisServer.js"
import type { Stats } from "./load/capacityPlan.js"
import { BUCKET_MILLIS } from "./load/capacityPlan.js"

const option = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`)
  return at >= 0 ? Number(process.argv[at + 1]) : fallback
}
const PERSONS = option("persons", 8000)
const K = option("capacity", 32)
const ROUNDS = option("rounds", 2)
const WORKER_ARGS = (() => {
  const at = process.argv.indexOf("--worker-args")
  return at >= 0 ? process.argv[at + 1]!.split(" ").filter((arg) => arg !== "") : []
})()
const LATENCY = 20
const BIN = Path.resolve(import.meta.dirname, "../dist/bin/effect-clinical.js")
const SEALING_KEY = "q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4="

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "bench-queue-"))
const personsFile = Path.join(dir, "persons.txt")
Fs.writeFileSync(
  personsFile,
  Array.from({ length: PERSONS }, (_, i) => `BenchPerson${i.toString(36).padStart(6, "0")}Xq9==`).join("\n") + "\n"
)

/** GNU time, when installed: the CPU seconds of each process (user + system), printed on its last line. */
const TIME = Fs.existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined

/** The CPU seconds GNU time printed last in `stderr`, or NaN. */
const cpuOf = (stderr: string): number => {
  const match = /cpu ([\d.]+) ([\d.]+)\s*$/.exec(stderr)
  return match === null ? Number.NaN : Number(match[1]) + Number(match[2])
}

/** Runs a command of the executable (exit 0, else it throws); resolves with its stderr. */
const cli = (args: ReadonlyArray<string>, env: Record<string, string>): Promise<string> =>
  new Promise((resolve, reject) => {
    const command = TIME === undefined
      ? [process.execPath, BIN, ...args]
      : [TIME, "-f", "cpu %U %S", process.execPath, BIN, ...args]
    const child = spawn(command[0]!, command.slice(1), {
      env: { PATH: process.env.PATH ?? "", NO_COLOR: "1", ...env },
      stdio: ["ignore", "ignore", "pipe"]
    })
    let stderr = ""
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.on(
      "close",
      (code) => code === 0 ? resolve(stderr) : reject(new Error(`${args.join(" ")} exited ${code}: ${stderr}`))
    )
  })

/** A capacity server of its own for one run: its port, and its counts at the end. */
const service = async () => {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      Path.join(import.meta.dirname, "load/capacityServer.ts"),
      JSON.stringify({ capacity: K, retryAfterSeconds: 1, phases: [] })
    ],
    { stdio: ["ignore", "pipe", "inherit"] }
  )
  const line = await new Promise<string>((resolve) =>
    Readline.createInterface({ input: child.stdout! }).once("line", resolve)
  )
  const { controlPort, port } = JSON.parse(line) as { port: number; controlPort: number }
  return {
    url: `http://127.0.0.1:${port}`,
    stats: async (): Promise<Stats> => (await fetch(`http://127.0.0.1:${controlPort}`)).json() as Promise<Stats>,
    stop: () => child.kill("SIGTERM")
  }
}

interface Figures {
  readonly kind: string
  /** From the service's first request to its last 100 ms bucket. */
  readonly serviceMillis: number
  /** From the first process's start to the last one's exit (start-up included). */
  readonly wallMillis: number
  readonly throttled: number
  /** CPU seconds of every process of the run (start-up included), per 1,000 persons. */
  readonly cpuPerThousand: number
  readonly commandsPerPerson?: number
  readonly peakMiBPerWorker?: ReadonlyArray<number>
}

/** Commands Redis ran so far by name, those its scripts ran included. */
const commandStats = async (admin: Redis): Promise<Map<string, number>> =>
  new Map(
    [...(await admin.info("commandstats")).matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm)].map((
      [, name, calls]
    ) => [name!, Number(calls)])
  )

/** Commands Redis ran so far, those its scripts ran included. */
const commandCount = async (admin: Redis): Promise<number> =>
  [...(await commandStats(admin)).values()].reduce((sum, calls) => sum + calls, 0)

/** `--commands`: each command's calls per person in a queue run, the most first. */
const BY_COMMAND = process.argv.includes("--commands")

const perCommand = (before: Map<string, number>, after: Map<string, number>): string =>
  [...after].map(([name, calls]) => [name, (calls - (before.get(name) ?? 0)) / PERSONS] as const)
    .filter(([, perPerson]) => perPerson >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([name, perPerson]) => `${name} ${perPerson.toFixed(2)}`)
    .join(", ")

const runBatch = async (): Promise<Figures> => {
  const server = await service()
  const started = Date.now()
  const stderr = await cli(
    [
      "batch",
      "medications",
      "--persons-file",
      personsFile,
      "--out",
      Path.join(dir, `batch-${started}.ndjson`),
      "--concurrency",
      String(K)
    ],
    { CLINICAL_BASE_URL: server.url, CLINICAL_APPLICATION_ID: "5e0c2b8a-9d7f-4c1e-a3b6-0f2d4e6a8c10" }
  )
  const wallMillis = Date.now() - started
  const stats = await server.stats()
  server.stop()
  return {
    kind: "batch (1 process)",
    serviceMillis: stats.buckets.length * BUCKET_MILLIS,
    wallMillis,
    throttled: stats.throttled,
    cpuPerThousand: (cpuOf(stderr) * 1000) / PERSONS
  }
}

const runQueue = async (redis: RedisServer.RedisServer, workers: number): Promise<Figures> => {
  const server = await service()
  const admin = new Redis(redis.port, "127.0.0.1")
  await admin.flushall()
  await admin.config("RESETSTAT")
  const env = {
    CLINICAL_BASE_URL: server.url,
    CLINICAL_APPLICATION_ID: "5e0c2b8a-9d7f-4c1e-a3b6-0f2d4e6a8c10",
    CLINICAL_REDIS_URL: redis.url,
    CLINICAL_SEALING_KEY: SEALING_KEY
  }
  await cli(["queue", "enqueue", "medications", "--persons-file", personsFile, "--fleet-concurrency", String(K)], env)
  const before = await commandCount(admin)
  const statsBefore = BY_COMMAND ? await commandStats(admin) : new Map<string, number>()
  const shards = Path.join(dir, `shards-${Date.now()}`)
  const started = Date.now()
  const outputs = await Promise.all(
    Array.from(
      { length: workers },
      () =>
        cli(
          [
            "queue",
            "work",
            "--until-empty",
            "--shards",
            shards,
            "--concurrency",
            String(K),
            "--progress-every",
            "1",
            ...WORKER_ARGS
          ],
          env
        )
    )
  )
  const wallMillis = Date.now() - started
  const after = await commandCount(admin)
  if (BY_COMMAND) {
    process.stdout.write(`  ${workers} worker(s), per person: ${perCommand(statsBefore, await commandStats(admin))}\n`)
  }
  admin.disconnect()
  const stats = await server.stats()
  server.stop()
  const peaks = outputs.map((stderr) => Number(/peak memory (\d+) MiB/.exec(stderr)?.[1] ?? Number.NaN))
  if (stats.answered !== PERSONS) throw new Error(`the service answered ${stats.answered} persons, not ${PERSONS}`)
  return {
    kind: `queue, ${workers} worker process${workers === 1 ? "" : "es"}`,
    serviceMillis: stats.buckets.length * BUCKET_MILLIS,
    wallMillis,
    throttled: stats.throttled,
    cpuPerThousand: (outputs.reduce((sum, stderr) => sum + cpuOf(stderr), 0) * 1000) / PERSONS,
    commandsPerPerson: (after - before) / PERSONS,
    peakMiBPerWorker: peaks
  }
}

const average = (values: ReadonlyArray<number>): number => values.reduce((a, b) => a + b, 0) / values.length

const main = async () => {
  const redis = await RedisServer.start()
  const ideal = (PERSONS * LATENCY) / K
  process.stdout.write(
    `${PERSONS} persons, a service of capacity ${K} (${LATENCY} ms each: ideal ${ideal} ms, ${
      (PERSONS / ideal * 1000).toFixed(0)
    } persons/s), ` +
      `${ROUNDS} rounds, Node ${process.version}, ${Os.cpus().length} cores` +
      (WORKER_ARGS.length === 0 ? "" : `, workers given ${WORKER_ARGS.join(" ")}`) + "\n"
  )
  const kinds: Array<() => Promise<Figures>> = [
    runBatch,
    () => runQueue(redis, 1),
    () => runQueue(redis, 2),
    () => runQueue(redis, 4)
  ]
  const results: Array<Figures> = []
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate the order: what runs first in one round runs last in the next.
    const order = round % 2 === 0 ? kinds : [...kinds].reverse()
    for (const run of order) {
      const figures = await run()
      results.push(figures)
      const rate = PERSONS / (figures.serviceMillis / 1000)
      process.stdout.write(
        `round ${round + 1}  ${figures.kind.padEnd(28)} ${rate.toFixed(0).padStart(5)} persons/s ` +
          `(service ${figures.serviceMillis} ms, wall ${figures.wallMillis} ms, ${figures.throttled} 429s, ` +
          `${figures.cpuPerThousand.toFixed(2)} CPU s per 1,000 persons)` +
          (figures.commandsPerPerson === undefined
            ? ""
            : `; ${figures.commandsPerPerson.toFixed(1)} Redis commands per person; ` +
              `peak memory per worker ${figures.peakMiBPerWorker!.join(", ")} MiB`) +
          "\n"
      )
    }
  }
  const batchRates = results.filter((r) => r.kind.startsWith("batch")).map((r) => PERSONS / r.serviceMillis)
  const batchRate = average(batchRates)
  const batchCpu = average(results.filter((r) => r.kind.startsWith("batch")).map((r) => r.cpuPerThousand))
  for (const workers of [1, 2, 4]) {
    const rates = results.filter((r) => r.kind.startsWith(`queue, ${workers} `)).map((r) => PERSONS / r.serviceMillis)
    const mean = rates.reduce((a, b) => a + b, 0) / rates.length
    const cpu = results.filter((r) => r.kind.startsWith(`queue, ${workers} `)).map((r) => r.cpuPerThousand)
    process.stdout.write(
      `queue with ${workers}: ${(mean * 1000).toFixed(0)} persons/s, ${(mean / batchRate).toFixed(2)}x batch ` +
        `(rounds ${rates.map((rate) => (rate / batchRate).toFixed(2)).join(", ")}); CPU ${
          (average(cpu) / batchCpu).toFixed(2)
        }x batch's\n`
    )
  }
  await redis.stop()
  Fs.rmSync(dir, { recursive: true, force: true })
}

await main()
