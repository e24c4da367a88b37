/**
 * `effect-clinical queue dashboard` as an operations team opens it: the built executable over a real
 * queue on redis-server (worked by `queue work` against the mock), in a real browser (Debian's
 * chromium, headless, driven by puppeteer-core): the counts, a failed job by its run and input
 * position with its typed reason, and nowhere (page text, HTML, any answer of its API) a PersonUid,
 * the ApplicationId or the sealing key. Read-only: what would change the queue is refused. Beyond
 * loopback, basic auth is required. A screenshot is taken (`UPDATE_DOCS_SCREENSHOT=1` writes it to
 * docs/images/dashboard.png).
 */
import { MockClinicalServer } from "effect-clinical/testing"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import puppeteer, { type Browser } from "puppeteer-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { run, settingsFor } from "./support/Cli.js"
import { expectNone } from "./support/Leaks.js"
import * as QueueWorker from "./support/QueueWorker.js"
import * as RedisServer from "./support/RedisServer.js"

const SEALING_KEY = "q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4="
const UNKNOWN = "DbUnknownPersonQ7vNpXc000000+Lk/w=="
const root = Path.resolve(import.meta.dirname, "..")

/** Debian's chromium (installed by .ci/run when absent). */
const chromiumPath = (): string => {
  for (const name of ["chromium", "chromium-browser"]) {
    try {
      return execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim()
    } catch {
      // Not this name.
    }
  }
  throw new Error("chromium is not installed: .ci/run installs Debian's chromium")
}

let redis: RedisServer.RedisServer
let mock: MockClinicalServer.Started
let browser: Browser
let dir: string
const stops: Array<() => void> = []

beforeAll(async () => {
  dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "dashboard-"))
  ;[redis, mock] = await Promise.all([RedisServer.start(), MockClinicalServer.start()])
  browser = await puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    // As root (a CI container) chromium runs only without its sandbox; nothing but our page is opened.
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
  })
}, 60_000)
afterAll(async () => {
  for (const stop of stops.splice(0)) stop()
  await browser?.close()
  await Promise.all([redis?.stop(), mock?.close()])
  Fs.rmSync(dir, { recursive: true, force: true })
})

const env = (settings: Record<string, string> = {}) => ({
  ...settingsFor(mock.url, mock.applicationId),
  CLINICAL_REDIS_URL: redis.url,
  CLINICAL_SEALING_KEY: SEALING_KEY,
  ...settings
})

const secrets = () => [...mock.persons.map((person) => person.personUid), UNKNOWN, mock.applicationId, SEALING_KEY]

/** Starts `queue dashboard` with `args`; its URL once it said it (or its exit, when it refused). */
const dashboard = async (args: ReadonlyArray<string>, settings: Record<string, string> = {}) => {
  let output = { stdout: "", stderr: "" }
  let stop = () => {}
  const ran = run(["queue", "dashboard", "--port", "0", ...args], {
    env: env(settings),
    timeoutMillis: 120_000,
    started: (child, captured) => {
      output = captured
      stop = () => child.kill("SIGTERM")
      stops.push(stop)
    }
  })
  const said = await Promise.race([
    (async () => {
      while (!/queue dashboard: (http\S+)/.test(output.stderr)) await new Promise((resolve) => setTimeout(resolve, 50))
      return /queue dashboard: (http\S+)/.exec(output.stderr)![1]!
    })(),
    ran
  ])
  return { url: typeof said === "string" ? said : undefined, ran, stop, output: () => output }
}

describe("queue dashboard", { timeout: 120_000 }, () => {
  it("in a browser: counts, a failed job by run and position with its typed reason; no PersonUid anywhere", async () => {
    const file = Path.join(dir, "persons.txt")
    Fs.writeFileSync(file, [...mock.persons.map((person) => person.personUid), UNKNOWN].join("\n") + "\n")
    expect((await run(["queue", "enqueue", "medications", "--persons-file", file], { env: env() })).code).toBe(0)
    expect((await QueueWorker.start(env(), Path.join(dir, "shards")).exited).code).toBe(0)

    const { url } = await dashboard([])
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
    const page = await browser.newPage()
    const answers: Array<string> = []
    page.on("response", (response) => {
      if (response.url().includes("/api/")) void response.text().then((text) => answers.push(text), () => {})
    })
    await page.setViewport({ width: 1440, height: 560 })
    await page.goto(`${url}queue/effect-clinical?status=failed`, { waitUntil: "networkidle0", timeout: 30_000 })
    await page.waitForFunction(() => document.body.innerText.includes("run 1 index 3"), { timeout: 30_000 })
    const text = await page.evaluate(() => document.body.innerText)
    // The counts by state, as bull-board's tabs show them: 3 completed, 1 failed.
    expect(text).toMatch(/COMPLETED\s+3/)
    expect(text).toMatch(/FAILED\s+1/)
    // The failed job: its input position (the 4th line of the persons file) and its typed reason.
    expect(text).toContain("run 1 index 3")
    expect(text).toContain("ApiError PersonNotFound")
    // The failed job with its reason, as docs/distributed.md shows it.
    const screenshot = Path.join(dir, "dashboard.png")
    await page.screenshot({ path: screenshot })
    expect(Fs.statSync(screenshot).size).toBeGreaterThan(10_000)
    if (process.env.UPDATE_DOCS_SCREENSHOT === "1") {
      Fs.copyFileSync(screenshot, Path.join(root, "docs/images/dashboard.png"))
    }
    // Its data is shown sealed.
    await page.evaluate(() => {
      const tab = Array.from(document.querySelectorAll("button, a, li")).find((element) =>
        element.textContent === "Data"
      )
      ;(tab as HTMLElement | undefined)?.click()
    })
    await page.waitForFunction(() => document.body.innerText.includes("sealed with CLINICAL_SEALING_KEY"), {
      timeout: 10_000
    })
    const html = await page.content()
    expect(answers.length).toBeGreaterThan(0)
    for (
      const [what, seen] of [["page text", await page.evaluate(() => document.body.innerText)], ["page HTML", html], [
        "its API's answers",
        answers.join("\n")
      ]] as const
    ) {
      expectNone(what, seen, secrets())
    }
    await page.close()
  })

  it("is read-only: retrying, cleaning, pausing or adding a job is refused, and the queue is unchanged", async () => {
    const { url } = await dashboard(["--queue", "effect-clinical"])
    const before = await (await fetch(`${url}api/queues`)).json() as any
    const attempts = await Promise.all([
      fetch(`${url}api/queues/effect-clinical/retry/failed`, { method: "PUT" }),
      fetch(`${url}api/queues/effect-clinical/clean/completed`, { method: "PUT" }),
      fetch(`${url}api/queues/effect-clinical/pause`, { method: "PUT" }),
      fetch(`${url}api/queues/effect-clinical/empty`, { method: "PUT" }),
      fetch(`${url}api/queues/effect-clinical/add`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "x", data: {} })
      })
    ])
    // bull-board's answer for a read-only queue (405), not a route that does not exist.
    expect(attempts.map((attempt) => attempt.status)).toEqual([405, 405, 405, 405, 405])
    const after = await (await fetch(`${url}api/queues`)).json() as any
    expect(after.queues[0].counts).toEqual(before.queues[0].counts)
    expect(after.queues[0].isPaused).toBe(false)
    // Without a password it answers to loopback names alone: a page rebound to 127.0.0.1 reads nothing.
    const withHost = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const at = new URL(url!)
        Http.get({ host: at.hostname, port: at.port, path: "/api/queues", headers: { host } }, (response) => {
          response.resume()
          resolve(response.statusCode ?? 0)
        }).on("error", reject)
      })
    expect(await withHost("rebound.example:3000")).toBe(403)
    expect(await withHost(`localhost:${new URL(url!).port}`)).toBe(200)
  })

  it("a Redis it cannot reach is said at start, by its shown URL (exit 1)", async () => {
    const refused = await dashboard([], { CLINICAL_REDIS_URL: "redis://:pw-not-shown@127.0.0.1:1/0" })
    expect(refused.url).toBeUndefined()
    const ended = await refused.ran
    expect(ended).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/error: cannot reach Redis at redis:\/\/127\.0\.0\.1:1\/0\n$/)
    })
    expect(ended.stderr).not.toContain("pw-not-shown")
  })

  it("beyond loopback it needs CLINICAL_DASHBOARD_PASSWORD, then asks every request for it (basic auth)", async () => {
    const refused = await dashboard(["--host", "0.0.0.0"])
    expect(refused.url).toBeUndefined()
    expect(await refused.ran).toMatchObject({
      code: 2,
      stderr:
        "error: queue dashboard on 0.0.0.0 (beyond loopback) needs CLINICAL_DASHBOARD_PASSWORD: its basic auth's password\n"
    })
    const password = "correct horse battery"
    const guarded = await dashboard(["--host", "0.0.0.0"], { CLINICAL_DASHBOARD_PASSWORD: password })
    expect(guarded.output().stderr).toContain("; basic auth)")
    const at = guarded.url!.replace("0.0.0.0", "127.0.0.1")
    const basic = (user: string, secret: string) => ({
      authorization: `Basic ${Buffer.from(`${user}:${secret}`).toString("base64")}`
    })
    const anonymous = await fetch(`${at}api/queues`)
    expect(anonymous.status).toBe(401)
    expect(anonymous.headers.get("www-authenticate")).toMatch(/^Basic realm=/)
    expect((await fetch(`${at}api/queues`, { headers: basic("effect-clinical", "wrong password!!") })).status).toBe(401)
    expect((await fetch(`${at}api/queues`, { headers: basic("effect-clinical", password) })).status).toBe(200)
    expect(guarded.output().stderr).not.toContain(password)
  })
})
