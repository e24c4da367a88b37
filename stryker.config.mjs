// `npm run mutate`: mutation testing of the decision surface (the pure decisions of the token cache,
// a call's attempts, retries and batches, the scrubber, the request body, the batch checkpoint; the
// fleet's token sharing and its Redis store; the person operations, the Promise client, the CLI's
// batch; the queue's decisions and seal, the JSON syntax check) against the in-process tests
// (vitest.mutate.config.ts). The queue's interpreters and the transport's have runs of their own:
// `npm run mutate:queue` (over a real redis-server), `npm run mutate:transport`; the queue's
// command line runs only as the built executable: its hand mutants are `npm run mutate:queue-cli`.
// The report is printed and written to reports/mutation/.
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutate.config.ts" },
  plugins: ["@stryker-mutator/vitest-runner"],
  mutate: [
    "core/token/tokenCache.ts",
    "core/call/callPolicy.ts",
    "core/call/retryPolicy.ts",
    "core/call/concurrencyLimit.ts",
    "core/call/queueing.ts",
    "core/call/loadControl.ts",
    "core/call/gate.ts",
    "core/call/decodeFailure.ts",
    "core/observability/httpAttempt.ts",
    "core/call/retryBudget.ts",
    "core/call/circuitBreaker.ts",
    "core/batchTally.ts",
    "core/batchRun.ts",
    "core/redaction/redaction.ts",
    "core/redaction/readings.ts",
    "core/redaction/escapes.ts",
    "core/call/personRequest.ts",
    "src/internal/call/personRequest.ts",
    "core/checkpoint.ts",
    "src/internal/token/tokenSharing.ts",
    "src/internal/token/redisTokenStore.ts",
    "src/internal/token/storedEntry.ts",
    "core/token/tokenSharing.ts",
    "core/token/redisStore.ts",
    "core/token/storedEntry.ts",
    "core/token/tokenStore.ts",
    "core/call/authenticate.ts",
    "src/PersonAuthentication.ts",
    "core/call/personData.ts",
    "src/PersonData.ts",
    "src/promise.ts",
    "src/internal/callerValues.ts",
    "src/cli/batchJob.ts",
    "core/queue/jobDecision.ts",
    "core/queue/jobSeal.ts",
    "core/queue/runRecord.ts",
    "core/queue/queueSettings.ts",
    "core/queue/queueError.ts",
    "core/jsonSyntax.ts",
    "core/testing/operations.ts",
    "core/testing/faults.ts",
    "core/testing/mockState.ts",
    "core/testing/mockHttp.ts"
  ],
  // The Effect 4 line is a package of its own, with its own node_modules: no sandbox needs a copy.
  ignorePatterns: ["/effect4"],
  coverageAnalysis: "perTest",
  ignoreStatic: true,
  concurrency: 2,
  timeoutMS: 30000,
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/index.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  // Re-runs test only the mutants whose code or tests changed since the last run.
  incremental: true,
  // The first run of the whole suite, with coverage per test, takes minutes on 2 shared cores.
  dryRunTimeoutMinutes: 20,
  incrementalFile: "reports/stryker-incremental.json",
  thresholds: { high: 95, low: 90, break: null }
}
