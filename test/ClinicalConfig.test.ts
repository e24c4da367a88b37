import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Layer, Logger, Redacted } from "effect"
import { ClinicalConfig } from "effect-clinical"

const APPLICATION_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"

const resolve = (options: ClinicalConfig.Options) => ClinicalConfig.make(options)

const fromEnv = (env: Record<string, string>) =>
  Effect.provide(
    ClinicalConfig.ClinicalConfig,
    Layer.provide(
      ClinicalConfig.layerConfig,
      Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
    )
  )

describe("ClinicalConfig.layer", () => {
  it.effect("applies the documented defaults", () =>
    Effect.gen(function*() {
      const config = yield* resolve({ baseUrl: "https://openapi.intelichart.com", applicationId: APPLICATION_ID })
      expect(config.baseUrl).toBe("https://openapi.intelichart.com")
      expect(config.authUrl).toBe("https://openapi.intelichart.com")
      expect(config.tokenPath).toBe("/api/Server/Token")
      // Authenticate is documented on both hosts: the data host unless told otherwise.
      expect(config.authenticateUrl).toBe("https://openapi.intelichart.com")
      expect(config.authenticatePath).toBe("/api/Server/Authenticate")
      expect(config.dateOfBirthFormat).toBe("MM/DD/YYYY")
      expect(Redacted.value(config.applicationId)).toBe(APPLICATION_ID)
      expect(Duration.toMillis(config.tokenTimeout)).toBe(10_000)
      expect(Duration.toMillis(config.requestTimeout)).toBe(30_000)
      expect(Duration.toMillis(config.softRefreshWindow)).toBe(300_000)
      expect(Duration.toMillis(config.hardRefreshWindow)).toBe(30_000)
      expect(config.maxRetries).toBe(3)
      expect(Duration.toMillis(config.retryBaseDelay)).toBe(1000)
      expect(Duration.toMillis(config.retryMaxDelay)).toBe(30_000)
      expect(Duration.toMillis(config.deadline)).toBe(60_000)
      expect(config.retryWrites).toBe(false)
      expect(config.maxConcurrentRequests).toBe(64)
      expect(config.maxResponseBytes).toBe(4 * 1024 * 1024)
      expect(config.adaptiveConcurrency).toBe(true)
      expect(config.initialConcurrency).toBe(4)
      expect(config.retryBudget).toBe(true)
      expect(config.retryBudgetRatio).toBe(0.5)
      expect(config.circuitBreakerThreshold).toBe(10)
      expect(Duration.toMillis(config.circuitBreakerCooldown)).toBe(500)
      expect(Duration.toMillis(config.circuitBreakerMaxCooldown)).toBe(2000)
    }))

  it.effect("keeps a path prefix and drops trailing slashes", () =>
    Effect.gen(function*() {
      const config = yield* resolve({
        baseUrl: new URL("https://gateway.example.org/clinical/v1/"),
        authUrl: "https://auth.example.org//",
        applicationId: Redacted.make(` ${APPLICATION_ID.toUpperCase()} `)
      })
      expect(config.baseUrl).toBe("https://gateway.example.org/clinical/v1")
      expect(config.authUrl).toBe("https://auth.example.org")
      expect(Redacted.value(config.applicationId)).toBe(APPLICATION_ID.toUpperCase())
    }))

  it.effect("allows plain http only for loopback hosts", () =>
    Effect.gen(function*() {
      for (
        const baseUrl of ["http://localhost:8080", "http://127.0.0.1:1", "http://127.255.0.9", "http://[::1]:3000"]
      ) {
        const config = yield* resolve({ baseUrl, applicationId: APPLICATION_ID })
        expect(config.baseUrl).toBe(baseUrl)
      }
      for (
        const baseUrl of ["http://example.org", "http://128.0.0.1", "http://localhost.evil.org", "http://10.0.0.1"]
      ) {
        const error = yield* Effect.flip(resolve({ baseUrl, applicationId: APPLICATION_ID }))
        expect(error).toMatchObject({ _tag: "InvalidConfig", setting: "baseUrl" })
        expect(error.message).toContain("https")
      }
    }))

  const refused: ReadonlyArray<readonly [string, Partial<ClinicalConfig.Options>, string]> = [
    ["a relative baseUrl", { baseUrl: "/api" }, "baseUrl"],
    ["an empty baseUrl", { baseUrl: "" }, "baseUrl"],
    ["an ftp baseUrl", { baseUrl: "ftp://example.org" }, "baseUrl"],
    ["a baseUrl with a query", { baseUrl: "https://example.org/?a=1" }, "baseUrl"],
    ["a baseUrl with an empty query", { baseUrl: "https://example.org/?" }, "baseUrl"],
    ["a baseUrl with credentials", { baseUrl: "https://user:pw@example.org" }, "baseUrl"],
    ["an authUrl over http", { authUrl: "http://auth.example.org" }, "authUrl"],
    ["an ApplicationId that is not a GUID", { applicationId: "my-app" }, "applicationId"],
    ["a redacted ApplicationId with CR/LF", {
      applicationId: Redacted.make("3f2504e0-4f89-11d3-9a0c-0305e82c3301\r\nX: 1")
    }, "applicationId"],
    ["a tokenPath without a leading slash", { tokenPath: "api/Server/Token" }, "tokenPath"],
    ["a tokenPath with a query", { tokenPath: "/token?x=1" }, "tokenPath"],
    ["an authenticateUrl over http", { authenticateUrl: "http://openapi.example.org" }, "authenticateUrl"],
    [
      "an authenticatePath without a leading slash",
      { authenticatePath: "api/Server/Authenticate" },
      "authenticatePath"
    ],
    ["a dateOfBirthFormat without a day", { dateOfBirthFormat: "YYYY/MM" }, "dateOfBirthFormat"],
    ["a zero tokenTimeout", { tokenTimeout: 0 }, "tokenTimeout"],
    ["a nonsense requestTimeout", { requestTimeout: "soon" as Duration.DurationInput }, "requestTimeout"],
    ["an infinite requestTimeout", { requestTimeout: Duration.infinity }, "requestTimeout"],
    ["a negative soft window", { softRefreshWindow: -1 }, "softRefreshWindow"],
    [
      "a hard window longer than the soft one",
      { softRefreshWindow: "1 minute", hardRefreshWindow: "2 minutes" },
      "hardRefreshWindow"
    ],
    ["a negative maxRetries", { maxRetries: -1 }, "maxRetries"],
    ["a fractional maxRetries", { maxRetries: 1.5 }, "maxRetries"],
    ["a base delay longer than the cap", { retryBaseDelay: "1 minute", retryMaxDelay: "10 seconds" }, "retryBaseDelay"],
    ["a zero deadline", { deadline: 0 }, "deadline"],
    ["a retryWrites that is not a boolean", { retryWrites: "maybe" as unknown as boolean }, "retryWrites"],
    ["a zero maxConcurrentRequests", { maxConcurrentRequests: 0 }, "maxConcurrentRequests"],
    [
      "an adaptiveConcurrency that is not a boolean",
      { adaptiveConcurrency: "on" as unknown as boolean },
      "adaptiveConcurrency"
    ],
    ["a zero initialConcurrency", { initialConcurrency: 0 }, "initialConcurrency"],
    ["a retryBudgetRatio of 0", { retryBudgetRatio: 0 }, "retryBudgetRatio"],
    ["a retryBudgetRatio over 1", { retryBudgetRatio: 1.5 }, "retryBudgetRatio"],
    ["a NaN retryBudgetRatio", { retryBudgetRatio: Number.NaN }, "retryBudgetRatio"],
    ["a negative circuitBreakerThreshold", { circuitBreakerThreshold: -1 }, "circuitBreakerThreshold"],
    ["a zero circuitBreakerCooldown", { circuitBreakerCooldown: 0 }, "circuitBreakerCooldown"],
    ["a circuitBreakerCooldown under 10 ms", { circuitBreakerCooldown: "9ms" }, "circuitBreakerCooldown"],
    ["a circuitBreakerMaxCooldown over an hour", { circuitBreakerMaxCooldown: "61m" }, "circuitBreakerMaxCooldown"],
    [
      "a breaker cool-down longer than its longest",
      { circuitBreakerCooldown: "5 seconds", circuitBreakerMaxCooldown: "2 seconds" },
      "circuitBreakerCooldown"
    ],
    ["a NaN maxResponseBytes", { maxResponseBytes: Number.NaN }, "maxResponseBytes"],
    ["a zero maxResponseBytes", { maxResponseBytes: 0 }, "maxResponseBytes"],
    ["a maxRetryAfter over an hour", { maxRetryAfter: "61 minutes" }, "maxRetryAfter"],
    ["a maxTokenLifetime over a year", { maxTokenLifetime: "366 days" }, "maxTokenLifetime"],
    ["a NaN retryBaseDelay", { retryBaseDelay: Number.NaN }, "retryBaseDelay"],
    ["a NaN hardRefreshWindow", { hardRefreshWindow: Number.NaN }, "hardRefreshWindow"],
    ["a maxResponseBytes over 1 GiB", { maxResponseBytes: 1024 * 1024 * 1024 + 1 }, "maxResponseBytes"],
    ["a loopback-looking host that is not loopback", { baseUrl: "http://127.0.0.1.evil.example" }, "baseUrl"],
    ["localhost as a subdomain of another host", { baseUrl: "http://localhost.evil.example" }, "baseUrl"]
  ]
  for (const [name, override, setting] of refused) {
    it.effect(`refuses ${name}, naming ${setting}, without printing the ApplicationId`, () =>
      Effect.gen(function*() {
        const secret = "0badc0de-1111-2222-3333-444455556666"
        const error = yield* Effect.flip(
          resolve({ baseUrl: "https://example.org", applicationId: secret, ...override })
        )
        expect(error).toMatchObject({ _tag: "InvalidConfig", setting })
        expect(error.message).toContain(setting)
        for (const text of [String(error), JSON.stringify(error), error.message]) {
          expect(text).not.toContain(secret)
          expect(text).not.toContain("3f2504e0")
        }
      }))
  }
})

describe("ClinicalConfig.layerConfig", () => {
  it.effect("logs a warning for a CLINICAL_* variable of the environment a few letters from a setting (issue 23)", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ logLevel, message }) => lines.push(`${logLevel.label} ${String(message)}`))
      )
      process.env.CLINICAL_MAX_RETRYS = "5"
      const config = yield* fromEnv({ CLINICAL_BASE_URL: "https://x.org", CLINICAL_APPLICATION_ID: APPLICATION_ID })
        .pipe(Effect.provide(capture), Effect.ensuring(Effect.sync(() => delete process.env.CLINICAL_MAX_RETRYS)))
      expect(config.maxRetries).toBe(3)
      expect(lines).toEqual([
        "WARN CLINICAL_MAX_RETRYS is not a setting of effect-clinical and is ignored: did you mean CLINICAL_MAX_RETRIES?"
      ])
    }))

  it.effect("reads every setting from the environment", () =>
    Effect.gen(function*() {
      const config = yield* fromEnv({
        CLINICAL_BASE_URL: "https://openapitest.intelichart.com",
        CLINICAL_AUTH_URL: "https://openapiauthtest.intelichart.com",
        CLINICAL_APPLICATION_ID: APPLICATION_ID,
        CLINICAL_TOKEN_PATH: "/api/server/token",
        CLINICAL_AUTHENTICATE_URL: "https://openapiauthtest.intelichart.com",
        CLINICAL_AUTHENTICATE_PATH: "/api/server/authenticate",
        CLINICAL_DATE_OF_BIRTH_FORMAT: "YYYY-MM-DD",
        CLINICAL_TOKEN_TIMEOUT: "3 seconds",
        CLINICAL_REQUEST_TIMEOUT: "4 seconds",
        CLINICAL_SOFT_REFRESH_WINDOW: "2 minutes",
        CLINICAL_HARD_REFRESH_WINDOW: "20 seconds",
        CLINICAL_MAX_RETRIES: "0",
        CLINICAL_RETRY_BASE_DELAY: "200 millis",
        CLINICAL_RETRY_MAX_DELAY: "5 seconds",
        CLINICAL_DEADLINE: "15 seconds",
        CLINICAL_RETRY_WRITES: "true",
        CLINICAL_MAX_CONCURRENT_REQUESTS: "8",
        CLINICAL_MAX_RESPONSE_BYTES: "65536",
        CLINICAL_ADAPTIVE_CONCURRENCY: "false",
        CLINICAL_INITIAL_CONCURRENCY: "2",
        CLINICAL_RETRY_BUDGET: "no",
        CLINICAL_RETRY_BUDGET_RATIO: ".2",
        CLINICAL_CIRCUIT_BREAKER_THRESHOLD: "0",
        CLINICAL_CIRCUIT_BREAKER_COOLDOWN: "250ms",
        CLINICAL_CIRCUIT_BREAKER_MAX_COOLDOWN: "4s"
      })
      expect(config.authUrl).toBe("https://openapiauthtest.intelichart.com")
      expect(config.tokenPath).toBe("/api/server/token")
      expect(config.authenticateUrl).toBe("https://openapiauthtest.intelichart.com")
      expect(config.authenticatePath).toBe("/api/server/authenticate")
      expect(config.dateOfBirthFormat).toBe("YYYY-MM-DD")
      expect(Duration.toMillis(config.tokenTimeout)).toBe(3000)
      expect(Duration.toMillis(config.requestTimeout)).toBe(4000)
      expect(Duration.toMillis(config.softRefreshWindow)).toBe(120_000)
      expect(Duration.toMillis(config.hardRefreshWindow)).toBe(20_000)
      expect(config.maxRetries).toBe(0)
      expect(Duration.toMillis(config.retryBaseDelay)).toBe(200)
      expect(Duration.toMillis(config.retryMaxDelay)).toBe(5000)
      expect(Duration.toMillis(config.deadline)).toBe(15_000)
      expect(config.retryWrites).toBe(true)
      expect(config.maxConcurrentRequests).toBe(8)
      expect(config.maxResponseBytes).toBe(65_536)
      expect(config.adaptiveConcurrency).toBe(false)
      expect(config.initialConcurrency).toBe(2)
      expect(config.retryBudget).toBe(false)
      expect(config.retryBudgetRatio).toBe(0.2)
      expect(config.circuitBreakerThreshold).toBe(0)
      expect(Duration.toMillis(config.circuitBreakerCooldown)).toBe(250)
      expect(Duration.toMillis(config.circuitBreakerMaxCooldown)).toBe(4000)
    }))

  it.effect("names the environment variable of a refused value", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        fromEnv({ CLINICAL_BASE_URL: "https://x.org", CLINICAL_APPLICATION_ID: "nope-secret" })
      )
      expect(error).toMatchObject({ _tag: "InvalidConfig", setting: "CLINICAL_APPLICATION_ID" })
      expect(String(error)).not.toContain("nope-secret")
    }))

  it.effect("a missing required variable is an InvalidConfig that says it is not set", () =>
    Effect.gen(function*() {
      for (
        const env of [{ CLINICAL_APPLICATION_ID: APPLICATION_ID }, {
          CLINICAL_BASE_URL: "  ",
          CLINICAL_APPLICATION_ID: APPLICATION_ID
        }]
      ) {
        const error = yield* Effect.flip(fromEnv(env))
        expect(error).toMatchObject({ _tag: "InvalidConfig", setting: "CLINICAL_BASE_URL", reason: "is not set" })
        expect(error.message).toBe("invalid setting CLINICAL_BASE_URL: is not set")
      }
      const missingId = yield* Effect.flip(fromEnv({ CLINICAL_BASE_URL: "https://x.org" }))
      expect(missingId.message).toBe("invalid setting CLINICAL_APPLICATION_ID: is not set")
      expect(missingId.message).not.toContain("redacted")
    }))

  it.effect("durations are read the short way people type them, and Effect's way", () =>
    Effect.gen(function*() {
      const config = yield* fromEnv({
        CLINICAL_BASE_URL: "https://x.org",
        CLINICAL_APPLICATION_ID: APPLICATION_ID,
        CLINICAL_REQUEST_TIMEOUT: "30s",
        CLINICAL_TOKEN_TIMEOUT: "1500ms",
        CLINICAL_DEADLINE: "2m",
        CLINICAL_SOFT_REFRESH_WINDOW: "10 minutes",
        CLINICAL_HARD_REFRESH_WINDOW: "1.5m",
        CLINICAL_MAX_TOKEN_LIFETIME: "2h",
        CLINICAL_RETRY_WRITES: "YES"
      })
      expect(
        [
          config.requestTimeout,
          config.tokenTimeout,
          config.deadline,
          config.softRefreshWindow,
          config.hardRefreshWindow
        ]
          .map(Duration.toMillis)
      ).toEqual([30_000, 1500, 120_000, 600_000, 90_000])
      expect(Duration.toMillis(config.maxTokenLifetime)).toBe(7_200_000)
      expect(config.retryWrites).toBe(true)
    }))

  it.effect("a bare number or a word where a duration is expected is refused, naming the variable", () =>
    Effect.gen(function*() {
      for (const value of ["30", "soon", "-5s", "30 parsecs"]) {
        const error = yield* Effect.flip(
          fromEnv({
            CLINICAL_BASE_URL: "https://x.org",
            CLINICAL_APPLICATION_ID: APPLICATION_ID,
            CLINICAL_DEADLINE: value
          })
        )
        expect(error, value).toMatchObject({ _tag: "InvalidConfig", setting: "CLINICAL_DEADLINE" })
      }
    }))

  it.effect("an ApplicationId in braces (as .NET writes a Guid) is accepted and sent without them", () =>
    Effect.gen(function*() {
      const config = yield* fromEnv({
        CLINICAL_BASE_URL: "https://x.org",
        CLINICAL_APPLICATION_ID: `{${APPLICATION_ID}}`
      })
      expect(Redacted.value(config.applicationId)).toBe(APPLICATION_ID)
    }))

  it.effect("a missing ApplicationId is reported without any value", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(fromEnv({ CLINICAL_BASE_URL: "https://x.org" }))
      expect(String(error)).toContain("CLINICAL_APPLICATION_ID")
    }))
})

describe("ClinicalConfig boundaries", () => {
  it.effect("maxResponseBytes of 1 byte and of exactly 1 GiB are accepted", () =>
    Effect.gen(function*() {
      for (const maxResponseBytes of [1, 1024 * 1024 * 1024]) {
        const config = yield* resolve({ baseUrl: "https://x.org", applicationId: APPLICATION_ID, maxResponseBytes })
        expect(config.maxResponseBytes).toBe(maxResponseBytes)
      }
    }))
})

describe("the network settings (issue 26)", () => {
  const base = { baseUrl: "https://openapi.intelichart.com", applicationId: APPLICATION_ID } as const
  const ENV = { CLINICAL_BASE_URL: base.baseUrl, CLINICAL_APPLICATION_ID: APPLICATION_ID }

  it.effect("by default: the environment's proxy, Node's CAs, no client certificate, undici's pool", () =>
    Effect.gen(function*() {
      const config = yield* resolve(base)
      expect(config.proxy).toEqual({ _tag: "FromEnvironment" })
      expect([config.noProxy, config.ca, config.clientCertificate, config.connections]).toEqual([
        undefined,
        undefined,
        undefined,
        undefined
      ])
      expect([config.caOnly, config.keepAliveTimeout, config.connectTimeout]).toEqual([false, undefined, undefined])
    }))

  it.effect("from options: a proxy URL (credentials a secret), no proxy, a CA, a client certificate, the pool", () =>
    Effect.gen(function*() {
      const config = yield* resolve({
        ...base,
        proxy: Redacted.make("http://user:pa%24%24@proxy.example:3128"),
        noProxy: "localhost, .internal.example",
        ca: "/etc/clinical/ca.pem",
        caOnly: true,
        clientCertificate: { cert: "client.pem", key: "client.key", passphrase: "pw" },
        connections: 16,
        keepAliveTimeout: "10s",
        connectTimeout: "3s"
      })
      expect(config.proxy).toMatchObject({ _tag: "Through", proxy: { origin: "http://proxy.example:3128" } })
      expect(JSON.stringify(config.proxy)).not.toMatch(/pa%24|pa\$\$|user/)
      expect(config.noProxy).toBe("localhost, .internal.example")
      expect([config.ca, config.caOnly, config.connections]).toEqual(["/etc/clinical/ca.pem", true, 16])
      expect(config.clientCertificate).toMatchObject({ _tag: "Pem", cert: "client.pem" })
      expect(Redacted.value((config.clientCertificate as { key: Redacted.Redacted<string> }).key)).toBe("client.key")
      expect(Duration.toMillis(config.keepAliveTimeout!)).toBe(10_000)
      expect(Duration.toMillis(config.connectTimeout!)).toBe(3000)
      expect((yield* resolve({ ...base, proxy: false })).proxy).toEqual({ _tag: "Direct" })
    }))

  it.effect("refusals name the setting, never a password", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(resolve({ ...base, proxy: "socks5://u:hunter2@p:1080", connections: 0 }))
      expect(refused).toMatchObject({
        setting: "proxy",
        reason: "must start with http:// or https://",
        others: [{ setting: "connections", reason: expect.any(String) }]
      })
      expect(JSON.stringify(refused)).not.toContain("hunter2")
      expect(yield* Effect.flip(resolve({ ...base, caOnly: true }))).toMatchObject({
        setting: "caOnly",
        reason: "needs ca: the CA to trust alone"
      })
      expect(yield* Effect.flip(resolve({ ...base, clientCertificate: { cert: "c.pem" } as never }))).toMatchObject({
        setting: "clientCertificate",
        reason: "needs key (CLINICAL_CLIENT_KEY_FILE): the private key's PEM text or file path"
      })
    }))

  it.effect("from the environment: CLINICAL_PROXY (none, or a URL), CLINICAL_CA_FILE, the client certificate's four variables", () =>
    Effect.gen(function*() {
      expect((yield* fromEnv({ ...ENV, CLINICAL_PROXY: "none" })).proxy).toEqual({ _tag: "Direct" })
      const config = yield* fromEnv({
        ...ENV,
        CLINICAL_PROXY: "http://proxy.example:3128",
        CLINICAL_NO_PROXY: "localhost",
        CLINICAL_CA_FILE: "/etc/clinical/ca.pem",
        CLINICAL_CLIENT_CERT_FILE: "/etc/clinical/client.pem",
        CLINICAL_CLIENT_KEY_FILE: "/etc/clinical/client.key",
        CLINICAL_CLIENT_KEY_PASSPHRASE: "s3cret",
        CLINICAL_CONNECTIONS: "32",
        CLINICAL_CONNECT_TIMEOUT: "5s"
      })
      expect(config.proxy).toMatchObject({ _tag: "Through", proxy: { origin: "http://proxy.example:3128" } })
      expect(config.clientCertificate).toMatchObject({ _tag: "Pem", cert: "/etc/clinical/client.pem" })
      expect(JSON.stringify(config.clientCertificate)).not.toContain("s3cret")
      expect([config.noProxy, config.ca, config.connections]).toEqual(["localhost", "/etc/clinical/ca.pem", 32])
      expect((yield* fromEnv({ ...ENV, CLINICAL_CLIENT_PFX_FILE: "c.p12" })).clientCertificate).toMatchObject({
        _tag: "Pkcs12",
        pfx: "c.p12"
      })
      expect(yield* Effect.flip(fromEnv({ ...ENV, CLINICAL_CLIENT_KEY_FILE: "/k.pem" }))).toMatchObject({
        setting: "CLINICAL_CLIENT_CERT_FILE",
        reason: "needs cert (CLINICAL_CLIENT_CERT_FILE): the certificate's PEM text or file path"
      })
    }))

  it("a variable a few letters from one of the client certificate's is warned about", () => {
    expect(ClinicalConfig.misspellingWarnings(["CLINICAL_CLIENT_KEY_FLE"])).toEqual([
      expect.stringContaining("CLINICAL_CLIENT_KEY_FILE")
    ])
  })
})

describe("the settings read by the core's table, as before it (from review)", () => {
  it.effect("durations compare exactly, to the nanosecond, past what a double of milliseconds holds", () =>
    Effect.gen(function*() {
      const base = { baseUrl: "https://api.example", applicationId: APPLICATION_ID }
      const tooLong = yield* Effect.flip(
        resolve({ ...base, maxTokenLifetime: Duration.nanos(31_536_000_000_000_001n) })
      )
      expect(tooLong.message).toBe("invalid setting maxTokenLifetime: must be at most 365 days")
      const windows = yield* Effect.flip(resolve({
        ...base,
        softRefreshWindow: Duration.nanos(9_007_199_254_740_992n),
        hardRefreshWindow: Duration.nanos(9_007_199_254_740_993n)
      }))
      expect(windows.message).toBe("invalid setting hardRefreshWindow: must not be longer than softRefreshWindow")
    }))

  it.effect("every setting is a key of the resolved settings, in the table's order, an unset one undefined", () =>
    Effect.gen(function*() {
      const config = yield* resolve({ baseUrl: "https://api.example", applicationId: APPLICATION_ID })
      expect(Object.keys(config)).toEqual(Object.keys(ClinicalConfig.environment))
      expect(Object.keys(config).slice(0, 3)).toEqual(["baseUrl", "authUrl", "applicationId"])
      expect("ca" in config && config.ca === undefined).toBe(true)
    }))

  it("the table's exports cannot be changed by a caller (the environment is read through them)", () => {
    expect(Object.isFrozen(ClinicalConfig.variables)).toBe(true)
    expect(Object.isFrozen(ClinicalConfig.environment)).toBe(true)
  })
})
