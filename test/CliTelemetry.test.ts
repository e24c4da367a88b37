/**
 * The commands' telemetry as an operations team receives it, with the built executable: a
 * Prometheus scrape of `queue work`, `queue status` and `batch` (the exposition parsed, its counts
 * matched with the run's), and an OTLP/HTTP collector stand-in on loopback receiving metrics and
 * spans (a span per job, the client's spans its children) from `batch` and `queue work`. Nothing a
 * scraper or a collector receives holds a PersonUid, the ApplicationId, a token or the sealing key.
 */
import { MockClinicalServer } from "effect-clinical/testing"
import type { ChildProcess } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { run, settingsFor } from "./support/Cli.js"
import { expectNone } from "./support/Leaks.js"
import * as QueueWorker from "./support/QueueWorker.js"
import * as RedisServer from "./support/RedisServer.js"
import * as Telemetry from "./support/Telemetry.js"

const SEALING_KEY = "q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4="

const persons: Array<MockClinicalServer.MockPerson> = Array.from({ length: 40 }, (_, i) => ({
  ...MockClinicalServer.fixturePersons[i % 3]!,
  personUid: `Tm${i.toString(36).padStart(3, "0")}Rq7vNpXc${((i * 7919) % 99991).toString(36)}+Lk/w==`
}))
const UNKNOWN = "TmUnknownPersonRq7vNpXc000000+Lk/w=="

let redis: RedisServer.RedisServer
let mock: MockClinicalServer.Started
let dir: string
const children: Array<ChildProcess> = []

beforeAll(async () => {
  dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "cli-telemetry-"))
  redis = await RedisServer.start()
  mock = await MockClinicalServer.start({ persons })
})
afterAll(async () => {
  await mock?.close()
  await redis?.stop()
  Fs.rmSync(dir, { recursive: true, force: true })
})
afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL")
  await RedisServer.flushAll(redis.port)
  await mock.clearFaults()
})

/** Everything a scraper or collector must never see. */
const secrets = () => [...persons.map((person) => person.personUid), UNKNOWN, mock.applicationId, SEALING_KEY]

const env = (settings: Record<string, string> = {}) => ({
  ...settingsFor(mock.url, mock.applicationId),
  CLINICAL_REDIS_URL: redis.url,
  CLINICAL_SEALING_KEY: SEALING_KEY,
  ...settings
})

let files = 0
const personsFile = (uids: ReadonlyArray<string>): string => {
  const file = Path.join(dir, `persons-${files++}.txt`)
  Fs.writeFileSync(file, uids.join("\n") + "\n")
  return file
}

/** Waits until `check` holds, looking every 50 ms (the test's own timeout bounds the wait). */
const eventually = async (check: () => Promise<boolean> | boolean): Promise<void> => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 50))
}

/** The scrape URL a command printed on stderr. */
const metricsUrl = (stderr: string): string | undefined =>
  /metrics: (http:\/\/127\.0\.0\.1:\d+\/metrics) \(Prometheus\)/.exec(stderr)?.[1]

/** Starts a command that serves metrics; resolves once it said where, with its process and its end. */
const serving = async (args: ReadonlyArray<string>, environment: Record<string, string>) => {
  let child: ChildProcess | undefined
  let output = { stdout: "", stderr: "" }
  const ended = run(args, {
    env: environment,
    timeoutMillis: 60_000,
    started: (started, captured) => {
      child = started
      output = captured
      children.push(started)
    }
  })
  await eventually(() => metricsUrl(output.stderr) !== undefined)
  return { child: child!, ended, output, url: metricsUrl(output.stderr)! }
}

const queueCommand = (args: ReadonlyArray<string>, settings: Record<string, string> = {}) =>
  run(["queue", ...args], { env: env(settings), timeoutMillis: 60_000 })

const enqueue = async (uids: ReadonlyArray<string>, queue = "watched") => {
  const ran = await queueCommand(["enqueue", "medications", "--queue", queue, "--persons-file", personsFile(uids)])
  expect(ran).toMatchObject({ code: 0, stderr: "" })
}

const statusJson = async (queue = "watched"): Promise<Record<string, any>> =>
  JSON.parse((await queueCommand(["status", "--queue", queue, "--json", "--sample", "0"])).stdout)

describe("a Prometheus scrape", { timeout: 120_000 }, () => {
  it("of queue work: jobs by outcome and the queue's depth, labelled with the queue, as the run counts them", async () => {
    const uids = [...persons.slice(0, 30).map((person) => person.personUid), UNKNOWN]
    await enqueue(uids)
    const worker = QueueWorker.start(env(), Path.join(dir, "shards-scrape"), [
      "--queue",
      "watched",
      "--metrics-port",
      "0"
    ], false)
    children.push(worker.child)
    await eventually(() => metricsUrl(worker.stderr()) !== undefined)
    await eventually(async () => {
      const run = (await statusJson()).run
      return run !== null && run.done + run.failed === 31
    })
    const { samples, text } = await Telemetry.scrape(metricsUrl(worker.stderr())!)
    const queue = { queue: "watched" }
    expect({
      completed: Telemetry.valueOf(samples, "clinical_queue_jobs_total", { ...queue, outcome: "completed" }),
      failed: Telemetry.valueOf(samples, "clinical_queue_jobs_total", { ...queue, outcome: "failed" }),
      notFound: Telemetry.valueOf(samples, "clinical_queue_failures_total", {
        ...queue,
        kind: "ApiError PersonNotFound"
      })
    }).toEqual({ completed: 30, failed: 1, notFound: 1 })
    // Read from Redis as the scrape came: nothing waiting or active any more.
    expect(
      ["waiting", "active", "delayed", "failed"].map((state) =>
        Telemetry.valueOf(samples, "clinical_queue_depth", { ...queue, state })
      )
    ).toEqual([0, 0, 0, 1])
    expect(
      ["enqueued", "done", "failed"].map((state) =>
        Telemetry.valueOf(samples, "clinical_queue_run_persons", { ...queue, state })
      )
    ).toEqual([31, 30, 1])
    expect(Telemetry.valueOf(samples, "clinical_queue_paused", queue)).toBe(0)
    // The client's own metrics are there too: one HTTP attempt per person at least.
    expect(Telemetry.valueOf(samples, "http_client_request_duration_count")).toBeGreaterThanOrEqual(31)
    // Every queue metric carries the queue's name.
    for (const sample of samples.filter((each) => each.name.startsWith("clinical_queue_"))) {
      expect(sample.labels.queue).toBe("watched")
    }
    expectNone("the scrape", text, secrets())
    // Anything but GET /metrics is not found; the endpoint listens on loopback alone.
    expect((await fetch(metricsUrl(worker.stderr())!.replace("/metrics", "/"))).status).toBe(404)
    worker.child.kill("SIGTERM")
    expect((await worker.exited).code).not.toBeNull()
  })

  it("of queue status --metrics-port: the depth is read from Redis for the scrapes (a second old at most), and it serves until stopped", async () => {
    await enqueue(persons.slice(0, 5).map((person) => person.personUid), "idle")
    const { child, ended: ran, output, url } = await serving(
      ["queue", "status", "--queue", "idle", "--sample", "0", "--metrics-port", "0"],
      env()
    )
    // Its table first, as without --metrics-port.
    await eventually(() => output.stdout.includes("waiting"))
    const first = await Telemetry.scrape(url)
    expect(Telemetry.valueOf(first.samples, "clinical_queue_depth", { queue: "idle", state: "waiting" })).toBe(5)
    await enqueue(persons.slice(5, 8).map((person) => person.personUid), "idle")
    // Read again once the last read is a second old (scrapes in a loop cost Redis one read a second).
    let second = await Telemetry.scrape(url)
    while (Telemetry.valueOf(second.samples, "clinical_queue_depth", { queue: "idle", state: "waiting" }) !== 8) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      second = await Telemetry.scrape(url)
    }
    expect(Telemetry.valueOf(second.samples, "clinical_queue_run_persons", { queue: "idle", state: "enqueued" }))
      .toBe(3)
    expect(Telemetry.valueOf(second.samples, "clinical_queue_redis_up", { queue: "idle" })).toBe(1)
    child.kill("SIGTERM")
    const ended = await ran
    expect(ended.signal ?? ended.code).not.toBeNull()
    expectNone("the scrape", second.text, secrets())
  })

  it("of batch: while it runs, the results it wrote; the input's size; the client's requests", async () => {
    const uids = persons.slice(0, 30).map((person) => person.personUid)
    // The first 20 reads are answered at once, the 21st is held: the batch is scraped while it waits.
    await mock.injectFaults("medications", [
      ...Array.from({ length: 20 }, () => MockClinicalServer.Fault.delay("0 millis")),
      MockClinicalServer.Fault.delay("60 seconds")
    ])
    const out = Path.join(dir, "batch-scraped.ndjson")
    const { child, ended: scraped, url } = await serving(
      [
        "batch",
        "medications",
        "--persons-file",
        personsFile(uids),
        "--out",
        out,
        "--concurrency",
        "1",
        "--metrics-port",
        "0"
      ],
      { ...settingsFor(mock.url, mock.applicationId), CLINICAL_REQUEST_TIMEOUT: "90s" }
    )
    await eventually(() => Fs.existsSync(out) && Fs.readFileSync(out, "utf8").split("\n").length > 20)
    const { samples, text } = await Telemetry.scrape(url)
    expect(Telemetry.valueOf(samples, "clinical_batch_results_total", { operation: "medications", outcome: "success" }))
      .toBe(20)
    expect(Telemetry.valueOf(samples, "clinical_batch_persons", { operation: "medications", state: "input" })).toBe(30)
    expect(Telemetry.valueOf(samples, "clinical_token_requests_total")).toBe(1)
    expectNone("the scrape", text, secrets())
    child.kill("SIGINT")
    const ended = await scraped
    expect(ended.code).toBe(130)
    expect(ended.stderr).toContain("--resume")
  })

  it("a port in use is a usage error naming it; a host without a port is refused", async () => {
    const taken = await Telemetry.collector()
    try {
      const port = new URL(taken.url).port
      const ran = await run(
        [
          "batch",
          "medications",
          "--persons-file",
          personsFile([persons[0]!.personUid]),
          "--out",
          Path.join(dir, "never.ndjson"),
          "--metrics-port",
          port
        ],
        { env: settingsFor(mock.url, mock.applicationId) }
      )
      expect(ran).toMatchObject({ code: 2, stderr: `error: cannot serve metrics on 127.0.0.1:${port}: EADDRINUSE\n` })
      const hostOnly = await run(["queue", "status", "--metrics-host", "0.0.0.0"], { env: env() })
      expect(hostOnly).toMatchObject({ code: 2, stderr: "error: --metrics-host needs --metrics-port\n" })
    } finally {
      await taken.close()
    }
  })
})

describe("an OTLP collector", { timeout: 120_000 }, () => {
  it("receives batch's metrics at its end and a span per call, by the standard variables, headers included", async () => {
    const collector = await Telemetry.collector()
    try {
      const uids = [...persons.slice(0, 9).map((person) => person.personUid), UNKNOWN]
      const ran = await run(
        ["batch", "medications", "--persons-file", personsFile(uids), "--out", Path.join(dir, "batch-otlp.ndjson")],
        {
          env: {
            ...settingsFor(mock.url, mock.applicationId),
            OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
            OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer collector-secret-1",
            OTEL_SERVICE_NAME: "nightly-sync"
          },
          timeoutMillis: 60_000
        }
      )
      expect(ran.code).toBe(3)
      expect(ran.stderr).not.toContain("collector-secret-1")
      const points = Telemetry.metricPoints(collector.posted)
      const results = (outcome: string) =>
        points.filter((point) => point.name === "clinical_batch_results_total" && point.attributes.outcome === outcome)
          .reduce((latest, point) => Math.max(latest, point.value), 0)
      expect([results("success"), results("failure")]).toEqual([9, 1])
      const spans = Telemetry.spansOf(collector.posted)
      expect(spans.filter((span) => span.name === "PersonData.medications")).toHaveLength(10)
      expect(spans.every((span) => span.resource["service.name"] === "nightly-sync")).toBe(true)
      expect(collector.posted.every((each) => each.headers.authorization === "Bearer collector-secret-1")).toBe(true)
      for (const each of collector.posted) expectNone(`OTLP ${each.path}`, each.text, secrets())
    } finally {
      await collector.close()
    }
  })

  it("receives queue work's spans: one per job (queue, position, attempt, outcome), the client's spans its children", async () => {
    const collector = await Telemetry.collector()
    try {
      await enqueue([...persons.slice(0, 4).map((person) => person.personUid), UNKNOWN], "traced")
      const worker = QueueWorker.start(
        env({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }),
        Path.join(dir, "shards-traced"),
        ["--queue", "traced"]
      )
      children.push(worker.child)
      expect((await worker.exited).code).toBe(0)
      const spans = Telemetry.spansOf(collector.posted)
      const jobs = spans.filter((span) => span.name === "ClinicalQueue.job")
      expect(jobs.map((span) => span.attributes["clinical.queue.index"]).map(Number).sort()).toEqual([0, 1, 2, 3, 4])
      expect(jobs.map((span) => span.attributes["clinical.queue.outcome"]).sort()).toEqual([
        "completed",
        "completed",
        "completed",
        "completed",
        "failed"
      ])
      for (const job of jobs) {
        expect(job.attributes).toMatchObject({
          "messaging.destination.name": "traced",
          "clinical.queue.attempt": expect.anything()
        })
        const reads = spans.filter((span) => span.name === "PersonData.medications" && span.parentSpanId === job.spanId)
        expect(reads).toHaveLength(1)
        expect(reads[0]!.traceId).toBe(job.traceId)
      }
      const points = Telemetry.metricPoints(collector.posted)
      expect(
        points.filter((point) =>
          point.name === "clinical_queue_jobs_total" && point.attributes.queue === "traced" &&
          point.attributes.outcome === "completed"
        ).reduce((latest, point) => Math.max(latest, point.value), 0)
      ).toBe(4)
      for (const each of collector.posted) expectNone(`OTLP ${each.path}`, each.text, secrets())
    } finally {
      await collector.close()
    }
  })
})
