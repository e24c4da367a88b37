/**
 * docs/observability.md's "Watching a run", run: its command-line session (a queue worked, then
 * `queue status --metrics-port` scraped with curl) against a real redis-server and the mock, and its
 * alert rules checked against real scrapes: every metric they name is exported, with every label
 * they select on, and every label value they match is one the metric takes.
 */
import { MockClinicalServer } from "effect-clinical/testing"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { blocks } from "../../scripts/snippets.js"
import { run } from "../support/Cli.js"
import * as QueueWorker from "../support/QueueWorker.js"
import * as RedisServer from "../support/RedisServer.js"
import { binDirectory, runSession, session } from "../support/Session.js"
import * as Telemetry from "../support/Telemetry.js"

const root = Path.resolve(import.meta.dirname, "../..")
const page = Fs.readFileSync(Path.join(root, "docs/observability.md"), "utf8")
const SEALING_KEY = "q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4="

let server: RedisServer.RedisServer
let mock: MockClinicalServer.Started
let dir = ""
beforeAll(async () => {
  ;[server, mock] = await Promise.all([RedisServer.start(), MockClinicalServer.start()])
  dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-clinical-watching-"))
  Fs.writeFileSync(
    Path.join(dir, "persons.txt"),
    [...mock.persons.map((person) => person.personUid), "no-such-person"].join("\n") + "\n"
  )
})
afterAll(async () => {
  const pid = Path.join(dir, "status.pid")
  if (Fs.existsSync(pid)) {
    try {
      process.kill(Number(Fs.readFileSync(pid, "utf8")), "SIGKILL")
    } catch {
      // Already stopped by the session's last step.
    }
  }
  await Promise.all([server?.stop(), mock?.close()])
  Fs.rmSync(dir, { recursive: true, force: true })
})

const settings = () => ({
  NO_COLOR: "1",
  CLINICAL_BASE_URL: mock.url,
  CLINICAL_APPLICATION_ID: mock.applicationId,
  CLINICAL_REDIS_URL: server.url,
  CLINICAL_SEALING_KEY: SEALING_KEY
})

/** The label values a metric of the alert rules may take (what the library counts by). */
const OUTCOMES = ["completed", "failed", "retried", "paused", "stalled"]

describe("docs/observability.md: watching a run", () => {
  it("the command-line session prints what the page shows", async () => {
    await runSession(session(page, "docs/observability.md"), dir, {
      ...settings(),
      PATH: `${binDirectory(dir)}:${process.env.PATH}`
    })
  }, 120_000)

  it("the alert rules name metrics and labels the commands export", async () => {
    const rules = blocks(page).filter((block) => block.language === "yaml")
    expect(rules).toHaveLength(1)
    // Enqueued first: a worker on a queue with no jobs yet stops at once (a usage error).
    Fs.writeFileSync(Path.join(dir, "alerts.txt"), mock.persons[0]!.personUid + "\nno-such-person\n")
    const enqueued = await run(
      ["queue", "enqueue", "medications", "--queue", "alerts", "--persons-file", Path.join(dir, "alerts.txt")],
      { env: settings() }
    )
    expect(enqueued.code).toBe(0)
    // A worker's scrape (jobs by outcome) beside the queue's gauges: what a Prometheus would hold.
    const worker = QueueWorker.start(settings(), Path.join(dir, "alert-shards"), [
      "--metrics-port",
      "0",
      "--queue",
      "alerts"
    ], false)
    try {
      let url: string | undefined
      let samples: Array<Telemetry.Sample> = []
      while (true) {
        url ??= /metrics: (http:\S+) /.exec(worker.stderr())?.[1]
        if (url !== undefined) {
          samples = (await Telemetry.scrape(url)).samples
          if (Telemetry.valueOf(samples, "clinical_queue_jobs_total", { outcome: "failed" }) === 1) break
        }
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      const selectors = [...rules[0]!.text.matchAll(/(clinical_[a-z_]+)(?:\{([^}]*)\})?/g)]
      expect(selectors.length).toBeGreaterThanOrEqual(4)
      for (const [, name, matchers] of selectors) {
        const exported = samples.filter((sample) => sample.name === name)
        expect(exported.length, `${name} is exported`).toBeGreaterThan(0)
        expect(exported.every((sample) => sample.labels.queue === "alerts"), `${name} carries the queue`).toBe(true)
        for (const [, label, values] of (matchers ?? "").matchAll(/(\w+)=~?"([^"]*)"/g)) {
          expect(exported.some((sample) => label! in sample.labels), `${name} has ${label}`).toBe(true)
          for (const value of values!.split("|")) expect(OUTCOMES, `${name}{${label}="${value}"}`).toContain(value)
        }
      }
    } finally {
      worker.child.kill("SIGKILL")
    }
  }, 120_000)
})
