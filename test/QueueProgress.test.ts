/** `queue work`'s progress line: its own counts and pace, the fleet's pace over the run and the time left. */
import type { ClinicalQueue } from "effect-clinical/bullmq"
import { describe, expect, it } from "vitest"
import { progressBar, progressLine } from "../src/cli/queueProgress.js"

const status = (
  done: number,
  waiting: number,
  run = 1,
  unanswered?: ClinicalQueue.Status["unanswered"]
): ClinicalQueue.Status => ({
  operation: "medications",
  pausedBecause: undefined,
  run: { run, id: "r", named: true, operation: "medications", persons: 1_000, enqueued: true, done, failed: 0 },
  enqueuing: false,
  waiting,
  active: 16,
  delayed: 0,
  failed: 0,
  prioritized: 0,
  isPaused: false,
  rateLimitedForMillis: 0,
  failedByKind: [],
  failedScanned: 0,
  unanswered
})

describe("queue work's progress line", () => {
  it("the first line: this process's counts, time and rate; no fleet pace yet", () => {
    expect(progressLine({ done: 40, failed: 0 }, 10_000, status(100, 884), undefined)).toBe(
      "queue work: 40 done, 0 failed here in 10.0 s (4.0/s); run 1: 100 done, 0 failed of 1000; " +
        "queue: 884 waiting, 16 active, 0 delayed, 0 failed"
    )
  })

  it("a later line: the fleet's pace since the last line, and the time left at it", () => {
    const earlier = { status: status(100, 884), millis: 10_000 }
    // 200 more done by the fleet in 10 s: 20/s; 400 left (384 waiting, 16 active): 20 s.
    expect(progressLine({ done: 80, failed: 0 }, 20_000, status(300, 384), earlier)).toBe(
      "queue work: 80 done, 0 failed here in 20.0 s (4.0/s); run 1: 300 done, 0 failed of 1000 (20.0/s), about 20.0 s left; " +
        "queue: 384 waiting, 16 active, 0 delayed, 0 failed"
    )
  })

  it("no pace across two runs, and no time left while nothing moves", () => {
    expect(progressLine({ done: 0, failed: 0 }, 20_000, status(0, 984, 2), { status: status(300, 0), millis: 10_000 }))
      .not.toContain("left")
    expect(progressLine({ done: 0, failed: 0 }, 20_000, status(300, 384), { status: status(300, 384), millis: 10_000 }))
      .toContain("of 1000 (0.0/s); queue")
  })

  it("active jobs of a worker that stopped answering: how many, and when they are taken back at the latest", () => {
    expect(
      progressLine(
        { done: 40, failed: 0 },
        10_000,
        status(100, 884, 1, { jobs: 16, backWithinMillis: 9_500 }),
        undefined
      )
    )
      .toBe(
        "queue work: 40 done, 0 failed here in 10.0 s (4.0/s); run 1: 100 done, 0 failed of 1000; " +
          "queue: 884 waiting, 16 active, 0 delayed, 0 failed; " +
          "16 active held by a worker that stopped answering: taken back within 9.5 s"
      )
  })

  it("at a terminal: a bar of the run's share done, the run's figures first, cut to the terminal's width", () => {
    const earlier = { status: status(100, 884), millis: 10_000 }
    const drawn = progressBar({ done: 80, failed: 0 }, 20_000, status(250, 384), earlier, 200)
    expect(drawn).toBe(
      "\r[######                  ] run 1: 250 done, 0 failed of 1000 (15.0/s), about 26.7 s left; " +
        "80 done, 0 failed here in 20.0 s (4.0/s)\x1b[K"
    )
    expect(progressBar({ done: 80, failed: 0 }, 20_000, status(250, 384), earlier, 60)).toHaveLength(1 + 59 + 3)
  })
})
