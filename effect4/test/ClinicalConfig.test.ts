/**
 * The Effect 4 line's settings: the core's table (core/config/settings.ts) read from options and
 * from an Effect 4 `ConfigProvider`, a secret held as Effect 4's `Redacted`, a duration as its
 * `Duration`, every refusal named and none showing a value.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Exit, Redacted } from "effect"
import * as ClinicalConfig from "../src/ClinicalConfig.js"
import type { InvalidConfig } from "../src/ClinicalError.js"

const APPLICATION_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"

const refusalOf = <A>(exit: Exit.Exit<A, InvalidConfig>): InvalidConfig => {
  const error = Exit.findErrorOption(exit)
  if (error._tag === "None") throw new Error("expected a refusal")
  return error.value
}

describe("ClinicalConfig (Effect 4)", () => {
  it.effect("options: the secret kept Redacted, durations as Duration in every form, the rest defaulted", () =>
    Effect.gen(function*() {
      const config = yield* ClinicalConfig.make({
        baseUrl: "https://api.example/",
        applicationId: Redacted.make(`{${APPLICATION_ID.toUpperCase()}}`),
        requestTimeout: "1500ms",
        deadline: Duration.minutes(2),
        retryBaseDelay: "2 seconds"
      })
      assert.strictEqual(config.baseUrl, "https://api.example")
      assert.strictEqual(config.authUrl, "https://api.example")
      assert.isTrue(Redacted.isRedacted(config.applicationId))
      assert.strictEqual(Redacted.value(config.applicationId), APPLICATION_ID.toUpperCase())
      assert.strictEqual(Duration.toMillis(config.requestTimeout), 1500)
      assert.strictEqual(Duration.toMillis(config.deadline), 120_000)
      assert.strictEqual(Duration.toMillis(config.retryBaseDelay), 2000)
      assert.strictEqual(Duration.toMillis(config.tokenTimeout), 10_000)
      assert.strictEqual(config.maxRetries, 3)
      assert.deepStrictEqual(config.proxy, { _tag: "FromEnvironment" })
      assert.notInclude(JSON.stringify(config).toLowerCase(), APPLICATION_ID.slice(0, 8))
    }))

  it.effect("every refused option at once, each named with why, none with its value", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(ClinicalConfig.make({
        baseUrl: "ftp://files.example",
        applicationId: "not-a-guid-secret-7731",
        maxRetries: 101,
        requestTimeout: "30" as ClinicalConfig.DurationSetting
      }))
      const refusal = refusalOf(exit)
      assert.strictEqual(refusal.setting, "baseUrl")
      assert.deepStrictEqual(refusal.others?.map((other) => other.setting), [
        "applicationId",
        "requestTimeout",
        "maxRetries"
      ])
      assert.include(refusal.others?.[1]?.reason ?? "", "a bare number needs a unit")
      assert.notInclude(refusal.message, "not-a-guid-secret-7731")
      assert.notInclude(JSON.stringify(refusal), "not-a-guid-secret-7731")
    }))

  it.effect("a rule between settings: the hard refresh window longer than the soft one is refused by name", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(ClinicalConfig.make({
        baseUrl: "https://api.example",
        applicationId: APPLICATION_ID,
        softRefreshWindow: "10s",
        hardRefreshWindow: "11s"
      }))
      assert.strictEqual(
        refusalOf(exit).message,
        "invalid setting hardRefreshWindow: must not be longer than softRefreshWindow"
      )
    }))

  it.effect("the environment through a ConfigProvider: variables named in refusals, a certificate from its parts", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        Effect.exit(
          ClinicalConfig.fromEnvironment.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))
        )
      const config = yield* read({
        CLINICAL_BASE_URL: " https://api.example ",
        CLINICAL_APPLICATION_ID: APPLICATION_ID,
        CLINICAL_DEADLINE: "90s",
        CLINICAL_NO_PROXY: "localhost"
      })
      assert.isTrue(Exit.isSuccess(config))
      if (Exit.isSuccess(config)) {
        assert.strictEqual(Duration.toMillis(config.value.deadline), 90_000)
        assert.strictEqual(config.value.noProxy, "localhost")
      }
      const refused = refusalOf(
        yield* read({ CLINICAL_BASE_URL: "https://api.example", CLINICAL_CLIENT_KEY_FILE: "/k" })
      )
      assert.strictEqual(refused.setting, "CLINICAL_APPLICATION_ID")
      assert.strictEqual(refused.reason, "is not set")
      assert.deepStrictEqual(refused.others?.map((other) => other.setting), ["CLINICAL_CLIENT_CERT_FILE"])
    }))

  it("a mistyped variable is named with the setting it is nearest to, and the tools' own variables are not", () => {
    assert.deepStrictEqual(ClinicalConfig.misspellingWarnings(["CLINICAL_REQUEST_TIMOUT", "CLINICAL_STACK", "PATH"]), [
      "CLINICAL_REQUEST_TIMOUT is not a setting of effect-clinical and is ignored: did you mean CLINICAL_REQUEST_TIMEOUT?"
    ])
  })
})
