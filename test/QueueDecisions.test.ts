/**
 * The queue's pure parts, as tables: what each typed failure means to BullMQ (`jobDecision`), and
 * what a job's seal holds and refuses (`jobSeal`). Their effects are tested on a real Redis in
 * Queue.test.ts and QueueFleet.test.ts.
 */
import { Either, Redacted } from "effect"
import { ClinicalError } from "effect-clinical"
import * as Crypto from "node:crypto"
import { describe, expect, it } from "vitest"
import { decide, kindOf } from "../core/queue/jobDecision.js"
import { unansweredOf } from "../core/queue/unanswered.js"
import { redactor } from "../core/redaction/redaction.js"
import { jobId, jobKeys, keyCheck, openJob, sealJob } from "../src/internal/queue/jobSeal.js"
import { describe as describeThrown, QueueError, queueError } from "../src/internal/queue/queueError.js"
import { type WorkerOptions, workerRefusal } from "../src/internal/queue/queueWorker.js"
import {
  countOf,
  fingerprint,
  inputRecordOf,
  MAX_RUN_PERSONS,
  newRunId,
  runNumberOf,
  runRecordOf,
  signed,
  SLOT_BYTES,
  verified
} from "../src/internal/queue/runRecord.js"
import { sealingKey } from "../src/internal/token/storedEntry.js"

const at = { operation: "medications", method: "POST", url: "https://h/api/Medications" }
const token = { operation: "token", method: "POST", url: "https://h/api/Server/Token" }

describe("decide: a failed call in BullMQ's terms", () => {
  const cases: ReadonlyArray<readonly [string, ClinicalError.ClinicalError, ReturnType<typeof decide>]> = [
    [
      "the person unknown (ApiError)",
      new ClinicalError.ApiError({ ...at, status: 400, errorType: "PersonNotFound", errorMessage: null }),
      { _tag: "Permanent" }
    ],
    ["a 400 from a data host", new ClinicalError.BadRequest({ ...at, status: 400 }), { _tag: "Permanent" }],
    [
      "a body that does not read",
      new ClinicalError.ResponseDecodeError({ ...at, status: 200, reason: "r" }),
      { _tag: "Permanent" }
    ],
    [
      "a refused PersonUid",
      new ClinicalError.InvalidRequest({ operation: "medications", field: "personUid", reason: "r" }),
      { _tag: "Permanent" }
    ],
    [
      "a 429 with Retry-After 2 s",
      new ClinicalError.RateLimited({ ...at, status: 429, retryAfterMillis: 2_000 }),
      { _tag: "PauseFleet", millis: 2_000 }
    ],
    [
      "a 429 without Retry-After: a second",
      new ClinicalError.RateLimited({ ...at, status: 429 }),
      { _tag: "PauseFleet", millis: 1_000 }
    ],
    [
      "a 503 with Retry-After 5 s",
      new ClinicalError.ServerError({ ...at, status: 503, retryAfterMillis: 5_000 }),
      { _tag: "PauseFleet", millis: 5_000 }
    ],
    ["a 500", new ClinicalError.ServerError({ ...at, status: 500 }), { _tag: "Retry" }],
    [
      "the circuit open, probed in 300 ms: a second at least",
      new ClinicalError.CircuitOpen({ operation: "medications", retryAfterMillis: 300 }),
      { _tag: "PauseFleet", millis: 1_000 }
    ],
    [
      "the network",
      new ClinicalError.TransportError({ ...at, reason: "Network", detail: "d" }),
      { _tag: "Retry" }
    ],
    [
      "the token endpoint refusing the ApplicationId",
      new ClinicalError.BadRequest({ ...token, status: 400 }),
      {
        _tag: "PauseQueue",
        reason: "the token endpoint refused the ApplicationId (BadRequest): check CLINICAL_APPLICATION_ID"
      }
    ],
    [
      "a data host refusing a fresh token",
      new ClinicalError.Unauthorized({ ...at, status: 401 }),
      {
        _tag: "PauseQueue",
        reason: "the service refused a fresh token (Unauthorized): check the ApplicationId and the service's hosts"
      }
    ],
    [
      "a refused date range: every person would be refused",
      new ClinicalError.InvalidRequest({ operation: "medications", field: "startDate", reason: "r" }),
      { _tag: "PauseQueue", reason: "every person would be refused: InvalidRequest startDate of the request" }
    ]
  ]
  for (const [name, error, decision] of cases) {
    it(name, () => expect(decide(error)).toEqual(decision))
  }
})

describe("kindOf: how failures are grouped, never a value", () => {
  it("the tag, an ApiError's ErrorType or a TransportError's reason, cut and made safe", () => {
    expect(kindOf(new ClinicalError.ServerError({ ...at, status: 500 }))).toBe("ServerError")
    expect(kindOf(new ClinicalError.TransportError({ ...at, reason: "Tls", detail: "d" }))).toBe("TransportError Tls")
    const hostile = new ClinicalError.ApiError({
      ...at,
      status: 400,
      errorType: `Bad\u001b[2J\nType ${"x".repeat(100)}`,
      errorMessage: null
    })
    expect(kindOf(hostile)).toBe(`ApiError Bad??2J?Type?${"x".repeat(27)}`)
    expect(kindOf(new ClinicalError.ApiError({ ...at, status: 400, errorType: null, errorMessage: null }))).toBe(
      "ApiError"
    )
    const field = new ClinicalError.InvalidRequest({ operation: "m", field: `a\nb${"y".repeat(50)}`, reason: "r" })
    expect(kindOf(field)).toBe(`InvalidRequest a?b${"y".repeat(37)}`)
  })

  it("a PersonUid the server echoes in its ErrorType is scrubbed whole, before the cut and the safe characters", () => {
    const uid = "Qc3f2504e0Tz8kLmWq4f89+Wp/x41d3=="
    const echoed = new ClinicalError.ApiError({
      ...at,
      status: 400,
      errorType: `UnknownPerson${uid}`,
      errorMessage: null
    })
    const kind = kindOf(echoed, redactor([uid]))
    expect(kind).toBe("ApiError UnknownPerson?redacted?")
    // No run of 6 characters of the PersonUid is left (the cut used to keep 24 of them, its "+/=" made "?").
    for (let at = 0; at + 6 <= uid.length; at++) {
      expect(kind).not.toContain(uid.slice(at, at + 6).replace(/[+/=]/g, "?"))
    }
  })
})

describe("a job's seal", () => {
  // Derived inside each test, not when the file loads: what runs at load is no test's (Stryker).
  const theKey = () => Either.getOrThrow(sealingKey("q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4="))
  const theKeys = () => jobKeys(theKey(), "bull", "q")
  const person = { personUid: "Zm9vYmFy+M2QxNzQ4/cGVyc29uLTAwMg==", index: 7 }
  const terms = { operation: "medications", run: 3, runId: "0123456789abcdef", named: true, range: {} }
  const ranged = { ...terms, range: { startDate: "2024-01-01" } }

  it("opens to the person, position, operation, run and range it sealed; its text and id hold none of them", () => {
    const keys = theKeys()
    const job = sealJob(keys, person, ranged)
    expect(openJob(keys, job.data)).toEqual(Either.right({ ...person, ...ranged }))
    expect(JSON.stringify(job)).not.toContain(person.personUid)
    expect(JSON.stringify(job)).not.toContain("medications")
    expect(job.id).toMatch(/^[0-9a-f]{32}$/)
    expect(job.id).toBe(jobId(keys, person, ranged))
    // Each term is the id's: another range, operation, run or position is another job.
    expect(
      new Set([
        job.id,
        jobId(keys, person, terms),
        jobId(keys, person, { ...ranged, operation: "ethnicities" }),
        jobId(keys, person, { ...ranged, run: 4 }),
        jobId(keys, { ...person, index: 8 }, ranged),
        jobId(keys, { ...person, personUid: "other" }, ranged),
        jobId(keys, person, { ...ranged, range: { startDate: "2024-01-01", endDate: "2024-12-31" } })
      ]).size
    ).toBe(7)
    // A fresh IV each time: the same person seals differently, under the same id.
    expect(sealJob(keys, person, terms).data.sealed).not.toBe(sealJob(keys, person, terms).data.sealed)
  })

  it("does not open under another key, for another queue or prefix, or tampered with", () => {
    const key = theKey()
    const keys = theKeys()
    const job = sealJob(keys, person, terms)
    const other = Either.getOrThrow(sealingKey("Zx8c7v6b5n4m3a2s1d0fGhJkLqWeRtYuIoPaSdFgHjK="))
    expect(Either.isLeft(openJob(jobKeys(other, "bull", "q"), job.data))).toBe(true)
    expect(Either.isLeft(openJob(jobKeys(key, "bull", "q2"), job.data))).toBe(true)
    expect(Either.isLeft(openJob(jobKeys(key, "other", "q"), job.data))).toBe(true)
    const bytes = Buffer.from(job.data.sealed, "base64")
    bytes[20] = bytes[20]! ^ 1
    expect(openJob(keys, { sealed: bytes.toString("base64") })).toEqual(
      Either.left("the job's sealed person does not open: another sealing key, another queue, or tampered with")
    )
  })

  it("anything else in a job's data is refused with a reason, never a throw", () => {
    const keys = theKeys()
    const none = Either.left("the job holds no sealed person: it was not added by effect-clinical")
    for (const data of [null, 42, "x", {}, { sealed: 1 }, { sealed: "A".repeat(16 * 1024 + 4) }]) {
      expect(openJob(keys, data)).toEqual(none)
    }
    const short = Either.left("the job's sealed person is cut short")
    expect(openJob(keys, { sealed: "" })).toEqual(short)
    expect(openJob(keys, { sealed: Buffer.alloc(28).toString("base64") })).toEqual(short)
    expect(openJob(keys, { sealed: Buffer.alloc(29).toString("base64") })).toEqual(
      Either.left("the job's sealed person does not open: another sealing key, another queue, or tampered with")
    )
    // The longest sealed text read: 16 KiB of base64, a PersonUid of 2,048 characters fitting well within.
    expect(openJob(keys, { sealed: "A".repeat(16 * 1024) })).not.toEqual(none)
  })

  it("a PersonUid longer than any is cut just past the longest, to be refused by the worker as too long", () => {
    const keys = theKeys()
    const opened = openJob(keys, sealJob(keys, { personUid: "a".repeat(100_000), index: 0 }, terms).data)
    expect(Either.map(opened, (job) => job.personUid.length)).toEqual(Either.right(2049))
  })

  it("the format is fixed: a seal written by this version opens, ids and the key check are as they were", () => {
    const keys = theKeys()
    // Jobs outlive a deployment: a worker of the next version must open what this one enqueued.
    const written =
      "NA/kfFZYqoPU4JSTjHqAu6xWF8CCdQZ7yPO7wfqSJ5W15XGFRc55lw4sJk5qXojqzxTWlxsOlFNVf7/IUPEkw56sKCFeqCQN/81O+bQGtv5iqhdKFQBGqusa1NBgXFDOaqKEsun+i+Ry6ebF189SdY5wScDnOVeSHaTNY98be7bJXtAGkRBFK9XHaeDSI59MfkKIQb75rrUU6l6eK+FkthVHlw=="
    const full = { ...terms, range: { startDate: "2024-01-01", endDate: "2024-12-31" } }
    expect(openJob(keys, { sealed: written })).toEqual(Either.right({ ...person, ...full }))
    expect(jobId(keys, person, terms)).toBe("e0567bc9f39963f85eb31ed67f39faf3")
    expect(jobId(keys, person, full)).toBe("bdabaf255b17a65aaba88076933e3819")
    expect(keyCheck(keys)).toBe("57af4fde411af404")
  })

  it("a seal that opens but holds no person of ours (written with the key, not by effect-clinical) is refused", () => {
    const keys = theKeys()
    const sealed = (json: string) => {
      const iv = Buffer.alloc(12, 1)
      const cipher = Crypto.createCipheriv("aes-256-gcm", Redacted.value(keys.seal), iv)
      cipher.setAAD(Buffer.from(keys.binding, "utf8"))
      return {
        sealed: Buffer.concat([iv, cipher.update(json, "utf8"), cipher.final(), cipher.getAuthTag()]).toString("base64")
      }
    }
    const refused = Either.left("the job's sealed person is not one effect-clinical wrote")
    const ours = `"o":"medications","r":1,"u":"0123456789abcdef","n":1`
    expect(openJob(keys, sealed("not JSON"))).toEqual(refused)
    expect(openJob(keys, sealed(`{"p":1,"i":0,${ours}}`))).toEqual(refused)
    expect(openJob(keys, sealed(`{"p":"x","i":-1,${ours}}`))).toEqual(refused)
    expect(openJob(keys, sealed(`{"p":"x","i":0.5,${ours}}`))).toEqual(refused)
    expect(openJob(keys, sealed(`{"p":"x","i":0,${ours},"s":5}`))).toEqual(refused)
    expect(openJob(keys, sealed(`{"p":"x","i":0,${ours},"e":5}`))).toEqual(refused)
    // The operation and the run are the job's: a seal without them (or of another shape) is not ours.
    const run = `"u":"0123456789abcdef","n":1`
    expect(openJob(keys, sealed(`{"p":"x","i":0}`))).toEqual(refused)
    expect(openJob(keys, sealed(`{"p":"x","i":0,"o":5,"r":1,${run}}`))).toEqual(refused)
    expect(openJob(keys, sealed(`{"p":"x","i":0,"o":"m","r":0,${run}}`))).toEqual(refused)
    expect(openJob(keys, sealed(`{"p":"x","i":0,"o":"m","r":1.5,${run}}`))).toEqual(refused)
    expect(openJob(keys, sealed(`{"p":"x","i":0,"o":"m","r":1,"u":"XYZ","n":1}`))).toEqual(refused)
    expect(openJob(keys, sealed(`{"p":"x","i":0,"o":"m","r":1,"u":"0123456789abcdef","n":2}`))).toEqual(refused)
    expect(openJob(keys, sealed(`{"p":"x","i":0,"o":"m","r":1,"u":"0123456789abcdef"}`))).toEqual(refused)
    expect(openJob(keys, sealed(`{"p":"x","i":0,${ours}}`))).toStrictEqual(
      Either.right({
        personUid: "x",
        index: 0,
        operation: "medications",
        run: 1,
        runId: "0123456789abcdef",
        named: true,
        range: {}
      })
    )
  })

  it("the keys differ by purpose: the seal's is not the ids'", () => {
    const keys = theKeys()
    expect(Buffer.from(Redacted.value(keys.seal)).equals(Buffer.from(Redacted.value(keys.name)))).toBe(false)
  })
})

describe("a run's records", () => {
  const theKeys = () =>
    jobKeys(Either.getOrThrow(sealingKey("q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4=")), "bull", "q")
  const record = {
    id: "0123456789abcdef",
    input: "f".repeat(32),
    operation: "medications",
    persons: 12,
    finished: true,
    named: true
  }

  it("a signed record reads back where it was written, under its key, and nowhere else", () => {
    const keys = theKeys()
    const text = signed(keys, ":run:3", record)
    expect(runRecordOf(verified(keys, ":run:3", text))).toEqual(record)
    // Moved to another key, another queue's, or under another sealing key: not read.
    expect(verified(keys, ":run:4", text)).toBeUndefined()
    expect(
      verified(
        jobKeys(Either.getOrThrow(sealingKey("q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4=")), "bull", "r"),
        ":run:3",
        text
      )
    )
      .toBeUndefined()
    expect(
      verified(
        jobKeys(Either.getOrThrow(sealingKey("Zx8c7v6b5n4m3a2s1d0fGhJkLqWeRtYuIoPaSdFgHjK=")), "bull", "q"),
        ":run:3",
        text
      )
    ).toBeUndefined()
    // Its text changed by one character, its tag kept: not read.
    expect(verified(keys, ":run:3", text.replace("\"persons\":12", "\"persons\":1e18"))).toBeUndefined()
    expect(verified(keys, ":run:3", text.replace("\"persons\":12", "\"persons\":13"))).toBeUndefined()
  })

  it("anything else where a record is kept reads as none, never a throw", () => {
    const keys = theKeys()
    for (const text of [null, undefined, 42, "", ".", "x".repeat(32) + ".{}", JSON.stringify(record), {}]) {
      expect(verified(keys, ":run:1", text)).toBeUndefined()
    }
    // Signed, but not JSON a record holds.
    const tagged = signed(keys, ":run:1", record)
    expect(verified(keys, ":run:1", tagged.slice(0, 33) + "{")).toBeUndefined()
  })

  it("a record of the wrong shape, or with a count beyond a run's, is none", () => {
    expect(runRecordOf(record)).toEqual(record)
    for (
      const bad of [
        null,
        [],
        { ...record, persons: -1 },
        { ...record, persons: 1.5 },
        { ...record, persons: MAX_RUN_PERSONS + 1 },
        { ...record, persons: "12" },
        { ...record, operation: 5 },
        { ...record, finished: "true" },
        { ...record, named: 1 },
        { ...record, id: "0123" },
        { ...record, id: undefined },
        { ...record, input: 5 }
      ]
    ) {
      expect(runRecordOf(bad)).toBeUndefined()
    }
    expect(runRecordOf({ ...record, persons: MAX_RUN_PERSONS })).toEqual({ ...record, persons: MAX_RUN_PERSONS })
    expect(runNumberOf(1)).toBe(1)
    for (const bad of [0, -1, 1.5, "1", null, Number.MAX_SAFE_INTEGER + 2]) expect(runNumberOf(bad)).toBeUndefined()
  })

  it("an input's record: a run number and a run id, or none", () => {
    expect(inputRecordOf({ run: 3, id: "0123456789abcdef" })).toEqual({ run: 3, id: "0123456789abcdef" })
    for (const bad of [null, 3, { run: 3 }, { run: 0, id: "0123456789abcdef" }, { run: 3, id: "ABC" }]) {
      expect(inputRecordOf(bad)).toBeUndefined()
    }
    expect(newRunId()).toMatch(/^[0-9a-f]{16}$/)
    expect(newRunId()).not.toBe(newRunId())
  })

  it("a tag of characters longer in bytes than hex digits reads as none, never a throw", () => {
    const keys = theKeys()
    expect(verified(keys, ":operation", "é".repeat(32) + ".1")).toBeUndefined()
    expect(verified(keys, ":operation", "😀".repeat(16) + ".1")).toBeUndefined()
  })

  it("a count Redis holds reads as a count, or 0", () => {
    expect(countOf("42")).toBe(42)
    expect(countOf(null)).toBe(0)
    expect(countOf(undefined)).toBe(0)
    for (const bad of ["x", "-3", "1.5", "1e400", "9007199254740993"]) expect(countOf(bad)).toBe(0)
  })

  it("a slot's fingerprint is the job id's first 8 bytes", () => {
    expect(fingerprint("0123456789abcdef" + "f".repeat(16))).toEqual(Buffer.from("0123456789abcdef", "hex"))
    expect(fingerprint("0123456789abcdef" + "f".repeat(16))).toHaveLength(SLOT_BYTES - 1)
  })
})

describe("a queue's failure, from anything Redis, BullMQ or an application's code throws", () => {
  const unreadable = Object.defineProperty({}, "message", {
    get() {
      throw new Error("no")
    }
  })
  it.each([
    ["an Error", new Error("connect ECONNREFUSED 127.0.0.1:6379"), "connect ECONNREFUSED 127.0.0.1:6379"],
    ["a string", "plain text", "plain text"],
    ["a number", 42, "42"],
    ["a symbol", Symbol("s"), "Symbol(s)"],
    ["undefined", undefined, "undefined"],
    ["null", null, "null"],
    ["an object that is not an Error", { code: 1 }, "an object that is not an Error"],
    ["an object whose message is not text", { message: 7 }, "an object that is not an Error"],
    ["an object without a prototype", Object.create(null), "an object that is not an Error"],
    ["an object whose message getter throws", unreadable, "an object whose message cannot be read"]
  ])("describes %s", (_, thrown, text) => {
    expect(describeThrown(thrown)).toBe(text)
  })

  it("keeps its own failures and a refused setting as they are; wraps the rest, cut at 300 characters", () => {
    const own = new QueueError({ operation: "status", detail: "d" })
    const refused = new ClinicalError.InvalidConfig({ setting: "sealingKey", reason: "another key" })
    expect(queueError("enqueue")(own)).toBe(own)
    expect(queueError("enqueue")(refused)).toBe(refused)
    const wrapped = queueError("enqueue")(new Error("x".repeat(400)))
    expect(wrapped).toBeInstanceOf(QueueError)
    expect(wrapped).toMatchObject({ operation: "enqueue", detail: "x".repeat(300) })
    expect(wrapped.message).toBe(`queue enqueue failed: ${"x".repeat(300)}`)
  })
})

describe("a worker's settings, checked before it starts", () => {
  const sink = () => {}
  it.each([
    ["sink", { sink: "a file" }, "must be a function that takes a job's record"],
    ["concurrency", { sink, concurrency: 0 }, "must be a whole number from 1 to 10000"],
    ["concurrency", { sink, concurrency: 10_001 }, "must be a whole number from 1 to 10000"],
    ["maxStalledCount", { sink, maxStalledCount: -1 }, "must be a whole number from 0 to 1000"],
    ["maxStalledCount", { sink, maxStalledCount: 1_001 }, "must be a whole number from 0 to 1000"],
    ["lockDuration", { sink, lockDuration: "long" }, "must be a duration"],
    ["stalledInterval", { sink, stalledInterval: -5 }, "must be a duration"],
    ["closeTimeout", { sink, closeTimeout: "5" }, "must be a duration"],
    ["sinkTimeout", { sink, sinkTimeout: "never" }, "must be a duration"]
  ])("refuses %s %j, naming it", (setting, options, reason) => {
    expect(workerRefusal(options as unknown as WorkerOptions)).toMatchObject({ _tag: "InvalidConfig", setting, reason })
  })

  it("takes every setting at its bound, and none at all", () => {
    expect(workerRefusal({ sink } as unknown as WorkerOptions)).toBeUndefined()
    expect(workerRefusal({
      sink,
      concurrency: 10_000,
      maxStalledCount: 0,
      lockDuration: "30 seconds",
      stalledInterval: "15s",
      closeTimeout: 25_000,
      sinkTimeout: "1m"
    } as unknown as WorkerOptions)).toBeUndefined()
    expect(workerRefusal({ sink, concurrency: 1, maxStalledCount: 1_000 } as unknown as WorkerOptions)).toBeUndefined()
  })
})

describe("unansweredOf: active jobs whose worker stopped answering", () => {
  const timings = { lockMillis: 9_000, stalledMillis: 5_000 }

  it("a lock renewed (over half the lock duration, less a second's slack) is a worker at work", () => {
    expect(unansweredOf([9_000, 4_500, 3_501], timings)).toBeUndefined()
    expect(unansweredOf([], timings)).toBeUndefined()
  })

  it("a lock gone, or not renewed in time: taken back at the next stall check after it lapses", () => {
    expect(unansweredOf([-2, 9_000], timings)).toEqual({ jobs: 1, backWithinMillis: 5_000 })
    expect(unansweredOf([3_400, 1_000, -2, 8_000], timings)).toEqual({ jobs: 3, backWithinMillis: 8_400 })
  })

  it("without the workers' timings, only a lapsed lock is judged, against BullMQ's default stall interval", () => {
    expect(unansweredOf([100, -2], undefined)).toEqual({ jobs: 1, backWithinMillis: 30_000 })
    // A lock without a TTL (not BullMQ's) is left alone.
    expect(unansweredOf([-1], timings)).toBeUndefined()
  })
})
