/** The tests `npm run mutate:queue` runs against each mutant (stryker.queue.config.mjs). */
import mutate from "./vitest.mutate.config.js"

export default {
  ...mutate,
  test: {
    ...mutate.test,
    include: [
      "test/QueueDecisions.test.ts",
      "test/Queue.test.ts",
      "test/QueueJobs.test.ts",
      "test/QueueLibrary.test.ts",
      "test/QueueRuns.test.ts",
      "test/RunRecord.test.ts",
      "test/ResultShards.test.ts",
      "test/WholeLines.test.ts"
    ]
  }
}
