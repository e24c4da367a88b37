/**
 * The load control's scenarios, for any Effect line: a client over the spec's fake service through
 * the line's in-memory transport, under its test clock with the jitter fixed (`Driver.inMemory`),
 * so that every request on the wire is counted exactly. Each scenario pins the service's answers,
 * the requests the client sent and the typed outcome of every call. The decisions are the core's
 * (core/call/loadControl.ts); both lines' runners are held to them here. Runner- and Effect-free.
 */
import * as assert from "node:assert/strict"
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
  })
}
