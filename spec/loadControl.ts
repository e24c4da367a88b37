/**
 * The load control's scenarios, for any Effect line: a client over the spec's fake service through
 * the line's in-memory transport, under its test clock with the jitter fixed (`Driver.inMemory`),
 * so that every request on the wire is counted exactly. Each scenario pins the service's answers,
 * the requests the client sent and the typed outcome of every call. The decisions are the core's
 * (core/call/loadControl.ts); both lines' runners are held to them here. Runner- and Effect-free.
 */
import * as assert from "node:assert/strict"
import { seededRandom } from "../core/testing/seeded.js"
import type { Driver, NetworkStep, Outcome, Runner } from "./driver.js"
import { FakeService, PERSON_UID } from "./fakeService.js"

const medications: NetworkStep = { _tag: "Medications", personUid: PERSON_UID }

/** The tags of a `Concurrently` step's outcomes, counted. */
const tagsOf = (outcome: Outcome | undefined): Record<string, number> => {
  assert.equal(outcome?._tag, "Success")
  const counts: Record<string, number> = {}
  for (const each of outcome.value as ReadonlyArray<Outcome>) {
    const tag = each._tag === "Success" ? "Success" : each.error._tag
    counts[tag] = (counts[tag] ?? 0) + 1
  }
  return counts
}

/** The failures of a `Concurrently` step. */
const failuresOf = (outcome: Outcome | undefined) =>
  (outcome?._tag === "Success" ? outcome.value as ReadonlyArray<Outcome> : []).flatMap((each) =>
    each._tag === "Failure" ? [each.error] : []
  )

/**
 * A service of `capacity` at once whose excess waits in line (first come, first served), each
 * answer taking `latencyAt(start)` from when its service starts: it answers each request when its
 * turn ends (the fake's own answer, delayed). `peak()`: the most requests it held at once.
 */
const serviceWithLine = (fake: FakeService, capacity: number, latencyAt: (millis: number) => number) => {
  const freeAt = Array.from({ length: capacity }, () => 0)
  const ends: Array<number> = []
  let startedAt: number | undefined
  let peak = 0
  fake.rule("data", (request, now) => {
    startedAt ??= now
    const slot = freeAt.indexOf(Math.min(...freeAt))
    const start = Math.max(now, freeAt[slot]!)
    // Whole milliseconds: answers due at one instant are due together, not a rounding error apart.
    const end = Math.round(start + latencyAt(start - startedAt))
    freeAt[slot] = end
    // Held now: those arrived and not yet answered, this one included.
    for (let i = ends.length - 1; i >= 0; i--) if (ends[i]! <= now) ends.splice(i, 1)
    ends.push(end)
    peak = Math.max(peak, ends.length)
    return { _tag: "Respond", response: fake.ownAnswer(request, now), afterMillis: end - now }
  })
  return { peak: () => peak }
}

export const loadControl = ({ describe, it }: Runner, driver: Driver): void => {
  describe(`load control in memory (${driver.line})`, () => {
    it(
      "a token endpoint that hangs while 200 calls wait: its failed requests count once each, not once per waiting call; back, the next call and 200 more succeed",
      async () => {
        const fake = new FakeService()
        // Every token request hangs (until the token timeout) until the 200 calls have ended; then tokens are issued.
        let down = true
        fake.rule("token", () => down ? { _tag: "Hang" } : undefined)
        let tokenRequestsWhileDown = 0
        const seen = await driver.inMemory(fake, [
          { _tag: "Concurrently", count: 200, step: medications },
          {
            _tag: "Await",
            what: async () => {
              tokenRequestsWhileDown = fake.tokenRequests()
              down = false
            }
          },
          medications,
          { _tag: "Concurrently", count: 200, step: medications }
        ])
        // Single flight: the 200 calls' attempts shared one token request at a time (four attempts, a
        // 10 s token timeout each, the call's deadline of 60 s).
        assert.ok(
          tokenRequestsWhileDown >= 3 && tokenRequestsWhileDown <= 4,
          `${tokenRequestsWhileDown} token requests`
        )
        // Before, each waiting call counted the shared request's failure: 199 of the 200 failed
        // CircuitOpen, and so did the next call after the endpoint was back ("probed again in 2 s").
        assert.deepEqual(tagsOf(seen.outcomes[0]), { TransportError: 200 })
        for (const failure of failuresOf(seen.outcomes[0])) {
          assert.equal(failure.operation, "token")
          assert.equal(failure.reason, "Timeout")
        }
        assert.equal(seen.outcomes[2]?._tag, "Success", JSON.stringify(seen.outcomes[2]))
        assert.deepEqual(tagsOf(seen.outcomes[3]), { Success: 200 })
        // One token request more, and every data call sent once.
        assert.equal(fake.tokenRequests(), tokenRequestsWhileDown + 1)
        assert.equal(fake.dataRequests(), 201)
      },
      60_000
    )

    it(
      "a service of 8 at once whose answers slow from 15 ms to 300 ms, its excess waiting in line: never more than 16 held at once, every call answered",
      async () => {
        const fake = new FakeService()
        const persons = 600
        // Rising over about the whole run at the service's pace (scripts/load/scenarios.ts's scenario 8),
        // each answer within 10% of it.
        const risingMillis = persons * 285 / (8 * Math.log(20))
        const draw = seededRandom(1)
        const service = serviceWithLine(
          fake,
          8,
          (at) => (at >= risingMillis ? 300 : 15 + 285 * at / risingMillis) * (0.9 + 0.2 * draw())
        )
        const seen = await driver.inMemory(fake, [
          { _tag: "Token" },
          { _tag: "All", steps: Array.from({ length: persons }, () => medications), concurrency: 64 }
        ], { maxConcurrentRequests: 64, clockToEachAnswer: true })
        assert.deepEqual(tagsOf(seen.outcomes[1]), { Success: persons })
        assert.equal(fake.dataRequests(), persons)
        assert.ok(service.peak() <= 16, `${service.peak()} held at once at a service of 8`)
        assert.ok(service.peak() >= 8, `${service.peak()} held at once: the service was never full`)
      },
      120_000
    )
  })
}
