// `npm run mutate:queue`: the queue's interpreters (enqueue, the run's store and records, the worker
// and its job processor, ClinicalQueue's wiring, the shards and collect) against the tests that run
// them on a real redis-server and real files. Its own run, beside `npm run mutate`'s: on 2 cores it
// takes the better part of an hour. The CLI's part is `npm run mutate:queue-cli` (hand mutants).
import base from "./stryker.config.mjs"

export default {
  ...base,
  vitest: { configFile: "vitest.mutate-queue.config.ts" },
  mutate: [
    // The interpreters live in core/queue/ (both lines' shells are thin): mutated there.
    "core/queue/runStore.ts",
    "core/queue/enqueue.ts",
    "core/queue/queueMeta.ts",
    "core/queue/queueWorker.ts",
    "core/queue/jobProcessor.ts",
    "core/queue/queueOperations.ts",
    "core/queue/jobSpan.ts",
    "core/queue/unanswered.ts",
    "src/ClinicalQueue.ts",
    "src/cli/resultShards.ts",
    "core/wholeLines.ts"
  ],
  htmlReporter: { fileName: "reports/mutation-queue/index.html" },
  jsonReporter: { fileName: "reports/mutation-queue/mutation.json" },
  incrementalFile: "reports/stryker-incremental-queue.json"
}
