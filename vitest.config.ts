import * as Path from "node:path"
import { defineConfig } from "vitest/config"
import LongestFirst from "./test/support/longestFirst.js"

export default defineConfig({
  resolve: {
    // Tests and examples import the package by name, exactly as users do.
    alias: {
      "effect-clinical/testing": Path.resolve(import.meta.dirname, "src/testing.ts"),
      "effect-clinical/promise": Path.resolve(import.meta.dirname, "src/promise.ts"),
      "effect-clinical/bullmq": Path.resolve(import.meta.dirname, "src/bullmq.ts"),
      "effect-clinical": Path.resolve(import.meta.dirname, "src/index.ts")
    }
  },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    // Skipped or focused tests must never land unnoticed.
    allowOnly: false,
    // A random order on every run (the seed is printed; `--sequence.seed=N` repeats one): a test that
    // passes only after another, or only before, fails some day rather than never.
    // Files start the longest first (test/support/longestFirst.ts), the rest in the seed's order.
    sequence: { shuffle: true, sequencer: LongestFirst, seed: Date.now() },
    // Two test files at a time: most of the suite waits on sockets and child processes.
    maxWorkers: 2,
    minWorkers: 1,
    // A ceiling against a hang, never a measure of speed: beside another busy file on 2 cores a test
    // of 3.7 s (two renewal periods watched after a one-second flush) went past vitest's 5 s default.
    testTimeout: 30_000,
    passWithNoTests: false,
    // The JSON report is what .ci/run counts passed and failed tests from.
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-report.json" }
  }
})
