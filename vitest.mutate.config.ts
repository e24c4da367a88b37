/**
 * The tests `npm run mutate` runs against each mutant: the in-process suites that exercise the core
 * modules (no child processes, no package installs, no fuzzing marathons), so that a mutation run
 * finishes in minutes on 2 cores.
 */
import { defineConfig, mergeConfig } from "vitest/config"
import base from "./vitest.config.js"

const merged = mergeConfig(
  base,
  defineConfig({
    test: {
      reporters: ["default"],
      outputFile: {}
    }
  })
)

// Set, not merged: mergeConfig joins arrays, and the base config's include (every test) would
// come back with these, slow fleet and child-process suites with it.
export default {
  ...merged,
  test: {
    ...merged.test,
    // The same order for every mutant: a mutant's verdict must not depend on a seed.
    sequence: { ...merged.test?.sequence, shuffle: false },
    // Not the build before the run: a sandbox's sources are instrumented, and tsc refuses them.
    // The two Promise tests that run dist/ in a child process use the build made before the run.
    globalSetup: [],
    include: [
      "test/TokenCache.test.ts",
      "test/NodeFloor.test.ts",
      "test/TokenService*.test.ts",
      "test/Resilience*.test.ts",
      "test/CallMachine.test.ts",
      "test/SharingMachine.test.ts",
      "test/Redaction*.test.ts",
      "test/Readings.test.ts",
      "test/Json.test.ts",
      "test/Url.test.ts",
      "test/AccessToken.test.ts",
      "test/TokenResponse.test.ts",
      "test/Pace.test.ts",
      "test/MedicationService.test.ts",
      "test/PersonData*.test.ts",
      "test/PersonAuthentication.test.ts",
      "test/ClinicalConfig.test.ts",
      "test/HttpDate.test.ts",
      "test/Arguments.test.ts",
      "test/Privacy.test.ts",
      // The shared specifications as the Effect 3 line runs them (Privacy's flows moved there).
      "test/PrivacySpec.test.ts",
      "test/ConformanceSpec.test.ts",
      "test/MockClinicalServer*.test.ts",
      "test/Batch.test.ts",
      "test/Checkpoint.test.ts",
      "test/CallPolicy.test.ts",
      "test/ConcurrencyLimit.test.ts",
      "test/LoadControl.test.ts",
      "test/LoadControlCalls*.test.ts",
      "test/LoadControlEdges.test.ts",
      "test/LoadControlFromStart.test.ts",
      "test/LatencySignal.test.ts",
      "test/DeliveryCap.test.ts",
      "test/Gate.test.ts",
      "test/PersonRequest.test.ts",
      "test/PersonCalls.core.test.ts",
      "test/TokenStore*.test.ts",
      "test/RedisTokenStore.test.ts",
      "test/Promise*.test.ts",
      "test/CallerValues.test.ts",
      "test/BatchJob*.test.ts",
      "test/QueueDecisions.test.ts",
      "test/JsonSyntax.test.ts"
    ]
  }
}
