// `npm run mutate`: mutation testing of the core modules (the pure decisions, the response
// reader, the scrubber, the validators) against the in-process tests (vitest.mutate.config.ts).
// The report is printed and written to reports/mutation/.
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutate.config.ts" },
  plugins: ["@stryker-mutator/vitest-runner"],
  mutate: [
    "src/internal/tokenCache.ts",
    "src/internal/callPolicy.ts",
    "src/internal/retryPolicy.ts",
    "src/internal/response.ts",
    "src/internal/redaction.ts",
    "src/internal/json.ts",
    "src/internal/validate.ts",
    "src/internal/personRequest.ts"
  ],
  coverageAnalysis: "perTest",
  ignoreStatic: true,
  concurrency: 2,
  timeoutMS: 30000,
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/index.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  thresholds: { high: 95, low: 90, break: null }
}
