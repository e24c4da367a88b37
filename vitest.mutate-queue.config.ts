/** The tests `npm run mutate:queue` runs against each mutant (stryker.queue.config.mjs). */
import mutate from "./vitest.mutate.config.js"

export default {
  ...mutate,
  test: {
    ...mutate.test,
    include: [
      // Every Queue file (Queue.test.ts, QueueJobs and QueueRuns split by concern) but the fleet's and the CLI's processes.
      "test/Queue*.test.ts",
      "test/RunRecord.test.ts",
      "test/ResultShards.test.ts",
      "test/WholeLines.test.ts"
    ],
    exclude: ["test/QueueFleet.test.ts", "test/QueueCli*.test.ts"]
  }
}
