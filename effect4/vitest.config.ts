import * as Path from "node:path"
import { defineConfig } from "vitest/config"

export default defineConfig({
  resolve: {
    // Tests and examples import the package by name, exactly as users do: its sources, never a
    // dist/ a pack left behind.
    alias: {
      "effect-clinical/testing": Path.resolve(import.meta.dirname, "src/testing.ts"),
      "effect-clinical/promise": Path.resolve(import.meta.dirname, "src/promise.ts"),
      "effect-clinical/bullmq": Path.resolve(import.meta.dirname, "src/bullmq.ts"),
      "effect-clinical": Path.resolve(import.meta.dirname, "src/index.ts")
    }
  },
  test: {
    include: ["test/**/*.test.ts"],
    // Skipped or focused tests must never land unnoticed; every run in a random order.
    allowOnly: false,
    sequence: { shuffle: true },
    maxWorkers: 2,
    // A ceiling against a hang, never a measure of speed: beside another busy file on 2 cores a test
    // of 3.7 s (two renewal periods watched after a one-second flush) went past vitest's 5 s default.
    testTimeout: 30_000,
    passWithNoTests: false,
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-report.json" }
  }
})
