/**
 * The fault soak in small and deterministic form: 1,000 calls in memory under TestClock, with the
 * same seeded fault mix as `npm run soak`, tokens revoked every 100 calls. Asserts the bounds.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Random } from "effect"
import { checks, runSoak, type SoakReport } from "../scripts/soak-run.js"
import * as Fake from "./support/FakeService.js"

const soak = (seed: number, calls = 1_000) =>
  runSoak({
    calls,
    concurrency: 64,
    revokeEvery: calls / 10,
    seed,
    transport: "memory",
    client: { requestTimeout: "1 second" },
    slowResponse: "1500 millis"
  }).pipe(Effect.withRandom(Random.make(seed)), (run) => Fake.runWithClock(run, "1 second", 10_000))

describe("fault soak (in memory, TestClock)", () => {
  it.effect(
    "1,000 calls through 16% failing attempts: at least 99.8% succeed, only typed errors, one token per revocation",
    () =>
      Effect.gen(function*() {
        const report: SoakReport = yield* soak(2026)
        for (const [check, passed] of checks(report)) expect(passed, check).toBe(true)
        // The faults really happened, and were retried by cause.
        expect(report.responsesByStatus[500]).toBeGreaterThan(20)
        expect(report.responsesByStatus[503]).toBeGreaterThan(20)
        expect(report.droppedConnections).toBeGreaterThan(10)
        expect(Object.keys(report.retriesByCause).sort()).toEqual(["429", "500", "503", "network", "timeout"])
        expect(report.revocations).toBe(9)
        expect(report.attemptsMean).toBeGreaterThan(1.1)
        // Four attempts, and one more with a fresh token after a 401 (once a call, not a retry).
        expect(report.attemptsMax).toBeLessThanOrEqual(5)
      }),
    60_000
  )

  it.effect("is deterministic: the same seed gives the same report", () =>
    Effect.gen(function*() {
      const { wallMillis: _a, ...first } = yield* soak(7, 300)
      const { wallMillis: _b, ...second } = yield* soak(7, 300)
      expect(second).toEqual(first)
    }), 60_000)
})
