/**
 * The queue as operations teams run it: `effect-clinical queue enqueue`, four `queue work`
 * processes (the built executable, BullMQ and ioredis as installed), `queue collect`, on a real
 * redis-server (append-only, so that a restart loses nothing) against the mock over loopback.
 * What is checked is what users rely on: every person exactly once in the collected file, one token
 * for the fleet, no PersonUid, token or ApplicationId in Redis (every key read after the run, and
 * every command seen by MONITOR during it), and survival of a killed worker, a 429 storm and a
 * Redis restart.
 */
import { MockClinicalServer } from "effect-clinical/testing"
import { Redis } from "ioredis"
import type { ChildProcess } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { run, settingsFor } from "./support/Cli.js"
import { forms } from "./support/Leaks.js"
import * as QueueEvents from "./support/QueueEvents.js"
import * as QueueWorker from "./support/QueueWorker.js"
import * as RedisServer from "./support/RedisServer.js"

const SEALING_KEY = "q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4="
const PERSONS = 5_000
/** Persons of the runs that kill a worker, throttle the fleet or restart Redis (a quarter through each). */
const RESILIENCE_PERSONS = 2_000

/** The last one's service echoes the person's own PersonUid inside an item: the shards must not keep it. */
const persons: Array<MockClinicalServer.MockPerson> = Array.from({ length: PERSONS }, (_, i) => {
  const person = {
    ...MockClinicalServer.fixturePersons[i % 3]!,
    personUid: `Fq${i.toString(36).padStart(4, "0")}Tz8kLmWq${((i * 104729) % 999983).toString(36)}+Wp/x==`
  }
  return i === PERSONS - 1
    ? { ...person, medications: [{ ...person.medications[0]!, Name: `Echo of ${person.personUid}` }] }
    : person
})

let redis: RedisServer.RedisServer
let mock: MockClinicalServer.Started
let dir: string
let personsFile: string

beforeAll(async () => {
  dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "queue-fleet-"))
  Fs.mkdirSync(Path.join(dir, "aof"))
  redis = await RedisServer.start({ appendOnlyDir: Path.join(dir, "aof") })
  mock = await MockClinicalServer.start({ persons })
  personsFile = Path.join(dir, "persons.txt")
  Fs.writeFileSync(personsFile, persons.map((person) => person.personUid).join("\n") + "\n")
})
afterAll(async () => {
  await mock?.close()
  await redis?.stop()
  Fs.rmSync(dir, { recursive: true, force: true })
})

const running: Array<ChildProcess> = []
afterEach(async () => {
  for (const child of running.splice(0)) child.kill("SIGKILL")
  await RedisServer.flushAll(redis.port)
  await mock.clearFaults()
  await mock.resetCounters()
})

const env = () => ({
  ...settingsFor(mock.url, mock.applicationId),
  CLINICAL_REDIS_URL: redis.url,
  CLINICAL_SEALING_KEY: SEALING_KEY
})

/** Starts `queue work` (`--until-empty` unless told) in a process of its own, `settings` over the usual ones. */
const worker = (
  shards: string,
  args: ReadonlyArray<string> = [],
  settings: Record<string, string> = {},
  untilEmpty = true
): QueueWorker.Started => {
  const started = QueueWorker.start({ ...env(), ...settings }, shards, args, untilEmpty)
  running.push(started.child)
  return started
}

const enqueue = async (file = personsFile, count = PERSONS) => {
  const ran = await run(["queue", "enqueue", "medications", "--persons-file", file], { env: env() })
  expect(ran.stderr).toBe("")
  expect(ran.stdout).toContain(`enqueued ${count} persons`)
  expect(ran.code).toBe(0)
}

/** A persons file of the first `n` persons. */
const firstPersons = (n: number): string => {
  const file = Path.join(dir, `persons-${n}.txt`)
  Fs.writeFileSync(file, persons.slice(0, n).map((person) => person.personUid).join("\n") + "\n")
  return file
}

/** `queue collect` of the latest run into a new file; its lines by index, and its text. */
const collect = async (
  shards: string
): Promise<{ lines: Array<Record<string, unknown>>; stdout: string; text: string }> => {
  const out = Path.join(dir, `collected-${Date.now()}.ndjson`)
  const ran = await run(["queue", "collect", "--shards", shards, "--out", out], { env: env() })
  expect(ran).toMatchObject({ code: 0, stderr: "" })
  expect(Fs.statSync(out).mode & 0o777).toBe(0o600)
  const text = Fs.readFileSync(out, "utf8")
  const lines = text.trimEnd().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>)
  return { lines, stdout: ran.stdout, text }
}

/** Every person once, in input order, with their own medications. */
const expectEveryPersonOnce = (lines: ReadonlyArray<Record<string, unknown>>, count = PERSONS) => {
  expect(lines).toHaveLength(count)
  lines.forEach((line, index) => {
    expect(line.index).toBe(index)
    expect(line.outcome).toBe("Success")
    expect(line.operation).toBe("medications")
    expect((line.items as Array<unknown>).length).toBe(persons[index]!.medications.length)
  })
}

/** The queue's status, as `queue status --json` prints it. */
const statusJson = async (): Promise<Record<string, any>> =>
  JSON.parse((await run(["queue", "status", "--json", "--sample", "0"], { env: env() })).stdout)

/** Resolves once the mock has answered `n` medication requests. */
const afterRequests = async (n: number) => {
  while ((await mock.counters()).medicationRequests < n) await new Promise((resolve) => setTimeout(resolve, 20))
}

const everything = () => RedisServer.contents(redis.port)

/** The secrets of a run: every PersonUid, the ApplicationId, and the token the mock saw. */
const secrets = async (): Promise<Array<string>> => {
  const token = (await mock.requestLog()).map((entry) => entry.headers.authorization ?? "").find((value) =>
    value.startsWith("Bearer ")
  )!.slice("Bearer ".length)
  expect(token.length).toBeGreaterThan(20)
  return [...persons.map((person) => person.personUid), mock.applicationId, token]
}

/**
 * The secrets found in `text`. Every PersonUid is looked for by what starts each one (the part no
 * escaping changes, in any letter case: 5,000 searches of every form would take minutes); a sample
 * of 100, the token and the ApplicationId in every form (any letter case, JSON-escaped,
 * percent-encoded, base64 ...).
 */
const leaked = (text: string, found: ReadonlyArray<string>): Array<string> => {
  const lower = text.toLowerCase()
  const starts = [...lower.matchAll(/fq[0-9a-z]{4}tz8klmwq/g)].map(([match]) => match)
  const sampled = found.filter((_, i) => i >= PERSONS || i % 50 === 7)
  return [...starts, ...sampled.filter((secret) => forms(secret).some((form) => lower.includes(form.toLowerCase())))]
}

// Generous: two cores shared with other suites make a run several times slower; nothing here is timed.
describe("queue: four worker processes", { timeout: 600_000 }, () => {
  it("5,000 persons: each exactly once in the collected file, one token request, no secret in Redis or on its wire", async () => {
    const monitor = new Redis(redis.port, "127.0.0.1")
    const seen: Array<string> = []
    const feed = await monitor.monitor()
    feed.on("monitor", (_time: string, args: Array<string>) => seen.push(args.join(" ")))
    await enqueue()
    const shards = Path.join(dir, "shards-once")
    const workers = Array.from({ length: 4 }, () => worker(shards))
    const exits = await Promise.all(workers.map((started) => started.exited))
    for (const exit of exits) expect(exit).toMatchObject({ code: 0 })
    feed.disconnect()
    monitor.disconnect()

    const { lines, stdout, text } = await collect(shards)
    expectEveryPersonOnce(lines)
    expect(text).toContain("Echo of <redacted>")
    expect(stdout).toContain(`collected ${PERSONS} of ${PERSONS} persons of run 1 (medications)`)
    expect(stdout).toContain("0 missing")
    // The run's counts are exact: each person once, however often a busy machine made BullMQ deliver one.
    expect((await statusJson()).run).toMatchObject({ run: 1, persons: PERSONS, done: PERSONS, failed: 0 })
    const counters = await mock.counters()
    expect(counters.tokenRequests).toBe(1)
    // Delivery is at least once: a job whose lock a starved worker could not renew in time is read again.
    expect(counters.medicationRequests).toBeGreaterThanOrEqual(PERSONS)
    const found = await secrets()
    expect(leaked(await everything(), found)).toEqual([])
    expect(seen.length).toBeGreaterThan(PERSONS)
    expect(leaked(seen.join("\n"), found)).toEqual([])
    expect(leaked(text, found)).toEqual([])
    // What a Redis reader learns: one job per person, and their count.
    console.log(`queue: ${(seen.length / PERSONS).toFixed(1)} Redis commands per person (MONITOR, 4 workers)`)
    for (const exit of exits) expect(leaked(exit.stderr, found)).toEqual([])
  })

  it("a worker killed with SIGKILL mid-run: its jobs go to the others within 15 s (the defaults); every person once, nothing lost", async () => {
    await enqueue(firstPersons(RESILIENCE_PERSONS), RESILIENCE_PERSONS)
    // Slower answers, so that the kill falls mid-run.
    await mock.setRandomFaults("medications", {
      seed: 7,
      faults: [{ probability: 1, fault: MockClinicalServer.Fault.delay("4 millis") }]
    })
    const shards = Path.join(dir, "shards-kill")
    // The default lock duration and stalled interval: what a fleet runs with.
    const workers = Array.from({ length: 4 }, () => worker(shards))
    await afterRequests(RESILIENCE_PERSONS / 4)
    const killedAt = Date.now()
    workers[0]!.child.kill("SIGKILL")
    let exited = false
    const stalled = QueueEvents.stalledBetween(redis.port, "effect-clinical", killedAt, killedAt + 20_000, () => exited)
    const exits = await Promise.all(workers.map((started) => started.exited))
    exited = true
    expect(exits[0]!.signal).toBe("SIGKILL")
    // The jobs it held were taken back (BullMQ's "stalled") within 15 s of the kill.
    const takenBack = await stalled
    expect(takenBack.length).toBeGreaterThan(0)
    expect(Math.max(...takenBack) - killedAt).toBeLessThanOrEqual(15_000)
    for (const exit of exits.slice(1)) expect(exit).toMatchObject({ code: 0 })
    // Meanwhile the others' progress lines said so: the jobs' worker stopped answering, and when they come back.
    expect(exits.slice(1).map((exit) => exit.stderr).join("\n")).toMatch(
      /queue: \d+ waiting, \d+ active, \d+ delayed, \d+ failed; \d+ active held by a worker that stopped answering: taken back within \d+(\.\d)? s/
    )
    const { lines } = await collect(shards)
    expectEveryPersonOnce(lines, RESILIENCE_PERSONS)
    // The killed worker's persons in flight were read again (at least once): never fewer requests than persons.
    expect((await mock.counters()).medicationRequests).toBeGreaterThanOrEqual(RESILIENCE_PERSONS)
    // Its counts, and the finished ones it had not reported, are exact all the same.
    expect((await statusJson()).run).toMatchObject({ persons: RESILIENCE_PERSONS, done: RESILIENCE_PERSONS, failed: 0 })
  })

  it("a 429 storm with Retry-After 2: the whole queue pauses (no job taken during it), then finishes", async () => {
    await enqueue(firstPersons(RESILIENCE_PERSONS), RESILIENCE_PERSONS)
    const shards = Path.join(dir, "shards-429")
    const workers = Array.from({ length: 4 }, () => worker(shards))
    await afterRequests(RESILIENCE_PERSONS / 4)
    await mock.injectFaults(
      "medications",
      Array.from({ length: 30 }, () => MockClinicalServer.Fault.status(429, { retryAfter: 2 }))
    )
    const pause = await QueueEvents.fleetPause(redis.port, "effect-clinical")
    // Until the pause ends, no worker takes a job: not one "active" in the queue's events.
    expect(
      await QueueEvents.jobsTakenBetween(
        redis.port,
        "effect-clinical",
        pause.setNoLaterThan,
        pause.setNoEarlierThan + 1_950
      )
    )
      .toBe(0)
    const exits = await Promise.all(workers.map((started) => started.exited))
    for (const exit of exits) expect(exit).toMatchObject({ code: 0 })
    const { lines } = await collect(shards)
    expectEveryPersonOnce(lines, RESILIENCE_PERSONS)
    const log = (await mock.requestLog()).filter((entry) => entry.operation === "medications")
    // Jobs a worker held already (16 each) may still send their request during the pause.
    const during = log.filter((entry) => entry.at > pause.setNoLaterThan && entry.at < pause.setNoEarlierThan + 1_800)
    expect(during.length).toBeLessThanOrEqual(4 * 16)
    expect(log.filter((entry) => entry.at >= pause.setNoEarlierThan + 1_800).length).toBeGreaterThan(0)
  })

  it("Redis restarted mid-run: the workers reconnect and finish; nothing lost or repeated in the results", async () => {
    await enqueue(firstPersons(RESILIENCE_PERSONS), RESILIENCE_PERSONS)
    await mock.setRandomFaults("medications", {
      seed: 9,
      faults: [{ probability: 1, fault: MockClinicalServer.Fault.delay("4 millis") }]
    })
    const shards = Path.join(dir, "shards-restart")
    // A job whose completion was lost with the connection is taken back after its lock and a stall check.
    const workers = Array.from({ length: 4 }, () => worker(shards, ["--lock-duration", "3", "--stalled-interval", "3"]))
    await afterRequests(RESILIENCE_PERSONS / 4)
    await redis.restart()
    const exits = await Promise.all(workers.map((started) => started.exited))
    for (const exit of exits) expect(exit).toMatchObject({ code: 0 })
    const { lines } = await collect(shards)
    expectEveryPersonOnce(lines, RESILIENCE_PERSONS)
  })

  it("a refused ApplicationId: the queue is paused with the reason, work --until-empty exits 4; resumed, it finishes", async () => {
    await enqueue(firstPersons(20), 20)
    const shards = Path.join(dir, "shards-refused")
    const refused = await worker(shards, [], { CLINICAL_APPLICATION_ID: "00000000-0000-4000-8000-000000000000" }).exited
    expect(refused.code).toBe(4)
    expect(refused.stderr).toContain("the token endpoint refused the ApplicationId")
    expect(leaked(refused.stderr, ["00000000-0000-4000-8000-000000000000"])).toEqual([])
    expect(await statusJson()).toMatchObject({ paused: true, waiting: 20, failed: 0 })
    expect((await mock.counters()).medicationRequests).toBe(0)
    expect((await run(["queue", "resume"], { env: env() })).code).toBe(0)
    expect(await worker(shards).exited).toMatchObject({ code: 0 })
    expect((await collect(shards)).lines).toHaveLength(20)
  })

  it("SIGTERM: the worker finishes the jobs in hand, takes no more, and exits 130; the rest wait for another", async () => {
    await enqueue(firstPersons(200), 200)
    await mock.setRandomFaults("medications", {
      seed: 3,
      faults: [{ probability: 1, fault: MockClinicalServer.Fault.delay("300 millis") }]
    })
    const shards = Path.join(dir, "shards-sigterm")
    const started = worker(shards, [], {}, false)
    await afterRequests(16)
    started.child.kill("SIGTERM")
    const exit = await started.exited
    expect(exit.code).toBe(130)
    const sent = (await mock.counters()).medicationRequests
    expect(sent).toBeLessThan(200)
    // Every request sent was answered and recorded; nothing was left active.
    expect(await statusJson()).toMatchObject({ active: 0, run: { done: sent }, waiting: 200 - sent })
    await mock.setRandomFaults("medications", undefined)
    expect(await worker(shards).exited).toMatchObject({ code: 0 })
    const { lines } = await collect(shards)
    expect(lines.map((line) => line.index)).toEqual(Array.from({ length: 200 }, (_, i) => i))
  })
})
