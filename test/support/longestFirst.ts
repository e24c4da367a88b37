/**
 * The order test files start in: the longest first, so that two workers end together rather than
 * one running a 200-second file alone at the end (a shuffled order left Node 20's run at 758 s for
 * 1,255 s of files: 130 s idle). Every other file follows in the run's seeded random order; the
 * tests inside each file are shuffled by vitest as before. Files run in workers of their own, so
 * their order shares no state; the tests' order within a file is what shuffling must vary.
 */
import * as Path from "node:path"
import { BaseSequencer, type TestSpecification } from "vitest/node"
import { seededRandom } from "../../core/testing/seeded.js"

/** Seconds each long file took on Node 20 with this repository's suite (2026-12-07): only the order depends on them. */
const SECONDS: Readonly<Record<string, number>> = {
  "QueueCli.test.ts": 200,
  "QueueFleet.test.ts": 154,
  "LoadScenarios.test.ts": 130,
  "Fleet.test.ts": 88,
  "CliProbeMockServer.test.ts": 22,
  "CliData.test.ts": 22,
  "CliBatch.test.ts": 21,
  "FreshProject.test.ts": 61,
  "Examples.test.ts": 57,
  "LoadControlFromStart.test.ts": 40,
  "Fuzz.test.ts": 39,
  "QueueEnqueueInput.test.ts": 13
}

export default class LongestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const seed = this.ctx.config.sequence.seed
    // vitest names the seed only for its own random order: named here, so that an order can be repeated.
    console.log(`Running test files with seed "${seed}", the longest first (test/support/longestFirst.ts)`)
    const random = seededRandom(seed)
    const keyed = files.map((file) => ({
      file,
      seconds: SECONDS[Path.basename(file.moduleId)] ?? 0,
      draw: random()
    }))
    keyed.sort((a, b) => b.seconds - a.seconds || a.draw - b.draw)
    return keyed.map((each) => each.file)
  }
}
