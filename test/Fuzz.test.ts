/**
 * Property tests (1,000 runs each): the parsers and decoders never throw and never die, whatever
 * the server sends, and bad inputs are refused before anything is sent.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, FastCheck as fc, Layer, Option, Redacted } from "effect"
import {
  ClinicalClient,
  ClinicalConfig,
  ClinicalError,
  HttpDate,
  HttpTransport,
  MedicationService
} from "effect-clinical"
import { boundedLines } from "../src/cli/persons.js"
import { MAX_TEXT, scrub } from "../src/internal/redaction/redaction.js"
import { readTokenResponse } from "../src/internal/token/tokenRequest.js"
import * as Fake from "./support/FakeService.js"

// Seeded: the same 1,000 cases on every run, so a failure is a bug to reproduce, never a flake.
const RUNS = { numRuns: 1_000, seed: 20261123 }

// 1,000 cases take 1 to 2 s on a quiet machine and six times that beside other work: the time a
// test may take is no measure of anything here.
const SLOW = { timeout: 120_000 }

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
const LONG_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
const pad = (n: number, width = 2) => String(n).padStart(width, "0")
const time = (d: Date) => `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`

/** The two obsolete forms, written here independently of the library. */
const rfc850 = (d: Date) =>
  `${LONG_DAYS[d.getUTCDay()]}, ${pad(d.getUTCDate())}-${MONTHS[d.getUTCMonth()]}-${pad(d.getUTCFullYear() % 100)} ${
    time(d)
  } GMT`
const asctime = (d: Date) =>
  `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, " ")} ${
    time(d)
  } ${d.getUTCFullYear()}`

const NOW = Date.UTC(2026, 10, 22)
const wholeSeconds = (min: number, max: number) =>
  fc.integer({ min: min / 1000, max: max / 1000 }).map((s) => new Date(s * 1000))

describe("HttpDate fuzzing", SLOW, () => {
  it("never throws on arbitrary strings, and accepts only what round-trips", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" })), (text) => {
        const parsed = HttpDate.parse(text)
        if (Option.isSome(parsed)) expect(HttpDate.parse(HttpDate.format(parsed.value))).toEqual(parsed)
      }),
      RUNS
    )
  })

  it("never throws on near-misses of real dates", () => {
    const date = wholeSeconds(Date.UTC(1900, 0, 1), Date.UTC(2100, 0, 1))
    const mutate = fc.tuple(date, fc.nat(40), fc.string({ maxLength: 3 }))
      .map(([d, at, junk]) => {
        const text = HttpDate.format(d)
        return text.slice(0, at) + junk + text.slice(at + junk.length)
      })
    fc.assert(fc.property(mutate, (text) => Option.isOption(HttpDate.parse(text))), RUNS)
  })

  it("IMF-fixdate: format then parse is the identity, to the second", () => {
    fc.assert(
      fc.property(wholeSeconds(Date.parse("0001-01-01T00:00:00Z"), Date.UTC(9999, 11, 31)), (d) => {
        expect(HttpDate.parseMillis(HttpDate.format(d))).toEqual(Option.some(d.getTime()))
      }),
      RUNS
    )
  })

  it("RFC 850 and asctime written independently parse to the same instant", () => {
    // RFC 850 has a two-digit year: within 50 years of `now` it is unambiguous.
    fc.assert(
      fc.property(wholeSeconds(NOW - 49 * 365 * 86_400_000, NOW + 49 * 365 * 86_400_000), (d) => {
        expect(HttpDate.parseMillis(rfc850(d), { now: NOW })).toEqual(Option.some(d.getTime()))
        expect(HttpDate.parseMillis(asctime(d))).toEqual(Option.some(d.getTime()))
      }),
      RUNS
    )
  })
})

const config = Effect.runSync(
  ClinicalConfig.make({ baseUrl: Fake.BASE_URL, applicationId: Fake.APPLICATION_ID })
)

const httpDates = fc.date({ min: new Date("1900-01-01"), max: new Date("2200-01-01"), noInvalidDate: true })
  .map((d) => HttpDate.format(d))

/** Header maps that sometimes hold the headers the token reader looks at, with any value. */
const headers = fc.tuple(
  fc.dictionary(fc.string(), fc.string()),
  fc.record({
    token_expires: fc.oneof(fc.string(), httpDates),
    date: fc.oneof(fc.string(), httpDates),
    "retry-after": fc.oneof(fc.string(), fc.nat().map(String))
  }, { requiredKeys: [] })
).map(([any, known]) => ({ ...any, ...known }) as Record<string, string>)

/** Bodies: JSON values, JSON shaped like the real answers, and arbitrary bytes. */
const bodies = fc.oneof(
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.record({ Token: fc.oneof(fc.string(), fc.jsonValue()), TokenType: fc.oneof(fc.constant("Bearer"), fc.string()) })
    .map((v) => JSON.stringify(v)),
  fc.record({ Medications: fc.oneof(fc.array(fc.jsonValue()), fc.jsonValue()), Success: fc.jsonValue() })
    .map((v) => JSON.stringify(v)),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes).toString("utf8")),
  // Nesting far past the stack, in every place a value is read or described.
  fc.tuple(
    fc.constantFrom("Token", "ErrorMessage", "ErrorType", "Medications", "Success"),
    fc.integer({ min: 60, max: 120_000 }),
    fc.constantFrom(false, "false", "FALSE", 0, true, "true", 1, "maybe", null)
  ).map(([key, depth, success]) =>
    `{"Success":${JSON.stringify(success)},"TokenType":"Bearer","${key}":${"[".repeat(depth)}${"]".repeat(depth)}}`
  )
)

const statuses = fc.oneof(fc.constantFrom(200, 400, 401, 405, 419, 429, 500, 503), fc.integer({ min: 100, max: 599 }))

const responses = fc.record({ status: statuses, headers, body: bodies })

describe("decoder fuzzing", SLOW, () => {
  it("the token reader returns a token or a typed error for any response", () => {
    fc.assert(
      fc.property(responses, fc.integer({ min: 0, max: 4_000_000_000_000 }), (response, now) => {
        const result = readTokenResponse(response, now, now, config)
        if (result._tag === "Left") expect(ClinicalError.isClinicalError(result.left)).toBe(true)
        else expect(result.right.lifetimeMillis).toBeGreaterThan(0)
      }),
      RUNS
    )
  })

  it("a medication call ends in a result or a typed error for any data response, never a defect", async () => {
    await fc.assert(
      fc.asyncProperty(responses, async (response) => {
        const fake = Effect.runSync(Fake.make())
        Effect.runSync(fake.scriptData(() => Effect.succeed(response)))
        const exit = await Effect.runPromiseExit(
          MedicationService.get(Fake.PERSON_UID).pipe(Effect.provide(Fake.clientLayer(fake, { maxRetries: 0 })))
        )
        if (Exit.isFailure(exit)) {
          expect(Cause.isFailType(exit.cause), Cause.pretty(exit.cause)).toBe(true)
          const error = Option.getOrThrow(Cause.failureOption(exit.cause))
          expect(ClinicalError.isClinicalError(error)).toBe(true)
        } else {
          expect(Array.isArray(exit.value.medications)).toBe(true)
        }
      }),
      RUNS
    )
  }, 60_000)
})

/** Strings that must never reach a header or a body: control characters, CR/LF, spaces, non-ASCII, huge. */
const hostile = fc.oneof(
  fc.tuple(fc.string(), fc.constantFrom("\r\n", "\n", "\r", "\u0000", "\u007f", "\t", " ", "\u2028"), fc.string())
    .map(([a, bad, b]) => `${a}${bad}${b}`),
  fc.string({ unit: "grapheme", minLength: 1 }).filter((s) => /[^\x21-\x7e]/.test(s)),
  fc.constant("A".repeat(5000)),
  fc.constant("")
)

const refusedBeforeSending = (
  run: (fake: Fake.FakeService) => Effect.Effect<unknown, unknown, MedicationService.MedicationService>
) =>
  Effect.gen(function*() {
    const fake = yield* Fake.make()
    const exit = yield* Effect.exit(run(fake).pipe(Effect.provide(Fake.clientLayer(fake))))
    return { exit, sent: (yield* fake.requests).length }
  })

describe("input fuzzing: refused with InvalidRequest before any request is sent", SLOW, () => {
  it("PersonUid", async () => {
    await fc.assert(
      fc.asyncProperty(hostile, fc.boolean(), async (uid, redacted) => {
        const { exit, sent } = await Effect.runPromise(
          refusedBeforeSending(() => MedicationService.get(redacted ? Redacted.make(uid) : uid))
        )
        expect(sent).toBe(0)
        expect(exit).toMatchObject({ _tag: "Failure" })
        const error = Exit.isFailure(exit) ? Option.getOrThrow(Cause.failureOption(exit.cause)) : undefined
        expect(error).toMatchObject({ _tag: "InvalidRequest", field: "personUid" })
        if (uid.length > 3) expect(String(error)).not.toContain(uid)
      }),
      RUNS
    )
  })

  it("dates", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(hostile, fc.string(), fc.date().map((d) => d.toISOString())),
        fc.constantFrom("startDate", "endDate"),
        async (value, field) => {
          const { exit, sent } = await Effect.runPromise(
            refusedBeforeSending(() => MedicationService.get(Fake.PERSON_UID, { [field]: value }))
          )
          if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return // a real YYYY-MM-DD day may well be valid
          expect(sent).toBe(0)
          const error = Exit.isFailure(exit) ? Option.getOrThrow(Cause.failureOption(exit.cause)) : undefined
          expect(error).toMatchObject({ _tag: "InvalidRequest", field })
        }
      ),
      RUNS
    )
  })

  it("ApplicationId: the layer refuses it with InvalidConfig, never echoing it, and sends nothing", async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(hostile, fc.uuid().map((u) => `${u}\r\nX: 1`), fc.string()), async (applicationId) => {
        let sent = 0
        const transport = HttpTransport.layerMemory(() => {
          sent++
          return Effect.never
        })
        const exit = await Effect.runPromiseExit(
          MedicationService.get(Fake.PERSON_UID).pipe(
            Effect.provide(
              ClinicalClient.layer({ baseUrl: Fake.BASE_URL, applicationId }).pipe(Layer.provide(transport))
            )
          )
        )
        expect(sent).toBe(0)
        const error = Exit.isFailure(exit) ? Option.getOrThrow(Cause.failureOption(exit.cause)) : undefined
        expect(error).toMatchObject({ _tag: "InvalidConfig", setting: "applicationId" })
        if (applicationId.trim().length > 3) expect(String(error)).not.toContain(applicationId.trim())
      }),
      RUNS
    )
  })
})

describe("redaction fuzzing (issue 22)", SLOW, () => {
  /** A secret of the kinds the client holds: a GUID, base64 with + / =, a pass code of any printable text. */
  const secret = fc.oneof(
    fc.uuid(),
    fc.uint8Array({ minLength: 12, maxLength: 80 }).map((bytes) => Buffer.from(bytes).toString("base64")),
    fc.string({ unit: fc.constantFrom(..."abcdefABCDEF0123456789ßẞ&<>'\"/+=%\\ -_é"), minLength: 8, maxLength: 40 })
  )
  const html = (text: string) =>
    text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(
      /'/g,
      "&#39;"
    )
  /** Each way a server may write a secret, up to two deep. */
  const once: ReadonlyArray<(text: string) => string> = [
    (text) => text,
    (text) => text.toUpperCase(),
    (text) => text.toLowerCase(),
    encodeURIComponent,
    (text) => JSON.stringify(text).slice(1, -1).replace(/\//g, "\\/").replace(/\+/g, "\\u002B"),
    html,
    (text) => text.replace(/-/g, "")
  ]
  const form = fc.tuple(fc.nat(once.length - 1), fc.nat(once.length - 1)).map(([a, b]) => (text: string) =>
    once[b]!(once[a]!(text))
  )
  /** What a server may write around it: any text, escapes that lead nowhere, things with secrets' shapes. */
  const filler = fc.oneof(
    fc.string({ maxLength: 30 }),
    fc.constantFrom("%", "%2", "\\", "\\u00", "&", "&#", "&amp", " ", "'", "{", "}", "-", "Error: ", "ErrorType"),
    fc.string({ unit: fc.constantFrom(..."%25&#;\\u0Aa/+="), maxLength: 20 })
  )

  it("a secret written any way up to two deep, amid any text, never survives scrub in any of those ways", () => {
    fc.assert(
      fc.property(secret, form, filler, filler, (value, write, before, after) => {
        const echoed = write(value)
        const scrubbed = scrub(`${before}${echoed}${after}`, [value], { byShape: false })
        // Whatever else happened, the echo is gone.
        expect(scrubbed.includes(echoed) && echoed.length >= 8).toBe(false)
        expect(scrubbed).toContain("<redacted>")
      }),
      RUNS
    )
  })

  it("scrub never throws, and bounds its output, on any text and any secrets", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 2000 }), fc.string({ unit: "binary", maxLength: 2000 }), filler),
        fc.array(fc.oneof(secret, fc.string({ maxLength: 50 })), { maxLength: 4 }),
        (text, secrets) => {
          const scrubbed = scrub(text, secrets)
          expect(scrubbed.length).toBeLessThanOrEqual(MAX_TEXT + 3)
        }
      ),
      RUNS
    )
  })
})

describe("the command line's line reader (issue 22)", SLOW, () => {
  it("whatever the chunks, it gives the lines a reference split gives, each cut at the cap", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: fc.constantFrom("a", "b", "\n", "\r", "é"), maxLength: 200 }),
        fc.array(fc.nat(40), { maxLength: 20 }),
        fc.integer({ min: 1, max: 12 }),
        async (text, cuts, max) => {
          const bytes = Buffer.from(text, "utf8")
          const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b)
          const chunks = async function*() {
            let at = 0
            for (const point of [...points, bytes.length]) {
              if (point > at) yield bytes.subarray(at, point)
              at = Math.max(at, point)
            }
          }
          const lines: Array<string> = []
          for await (const line of boundedLines(chunks(), max)) lines.push(line)
          const reference = bytes.toString("utf8").split("\n")
          if (reference.at(-1) === "") reference.pop()
          // Each line's first max + 1 bytes, and a \r at its end dropped (a CRLF break).
          const expected = reference.map((line) => {
            const cut = Buffer.from(line, "utf8").subarray(0, max + 1).toString("utf8")
            return cut.endsWith("\r") ? cut.slice(0, -1) : cut
          })
          expect(lines).toEqual(expected)
        }
      ),
      RUNS
    )
  })
})
