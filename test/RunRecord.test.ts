/**
 * A run's record as the queue keeps it in Redis, signed, then read back (`runRecord`), at the edge
 * every run starts from: no person enqueued yet. The shapes it refuses are tabled in
 * QueueDecisions.test.ts.
 */
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { jobKeys } from "../src/internal/queue/jobSeal.js"
import { newRunId, runRecordOf, signed, verified } from "../src/internal/queue/runRecord.js"
import { sealingKey } from "../src/internal/token/storedEntry.js"
import { sealingKey as testKey } from "./support/Keys.js"

describe("a run's record", () => {
  it("of a run just begun (or of an empty input), no person enqueued yet, reads back: 0 persons is a count", () => {
    const keys = jobKeys(Either.getOrThrow(sealingKey(testKey(1))), "bull", "q")
    const begun = {
      id: newRunId(),
      input: "f".repeat(32),
      operation: "medications",
      persons: 0,
      finished: false,
      named: true
    }
    expect(runRecordOf(verified(keys, ":run:1", signed(keys, ":run:1", begun)))).toEqual(begun)
    const empty = { ...begun, finished: true }
    expect(runRecordOf(verified(keys, ":run:1", signed(keys, ":run:1", empty)))).toEqual(empty)
  })
})
