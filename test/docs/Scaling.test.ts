/**
 * docs/scaling.md, run: each region below is copied into the page (npm run docs:snippets), and the
 * ACL the page recommends is the one a store is run through here, on a real redis-server.
 */
import { Effect, Layer, Redacted } from "effect"
import { ClinicalClient, TokenService, TokenStore } from "effect-clinical"
import { createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { Redis } from "ioredis"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { createClient } from "redis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Keys from "../support/Keys.js"
import * as RedisServer from "../support/RedisServer.js"

let server: RedisServer.RedisServer
let mock: MockClinicalServer.Started
beforeAll(async () => {
  ;[server, mock] = await Promise.all([RedisServer.start(), MockClinicalServer.start()])
})
afterAll(async () => {
  await Promise.all([server?.stop(), mock?.close()])
})

const page = Fs.readFileSync(Path.resolve(import.meta.dirname, "../../docs/scaling.md"), "utf8")

/** The key names in Redis now. */
const keys = async () => {
  const admin = new Redis(server.port, "127.0.0.1")
  const names = await admin.keys("*")
  await admin.flushall()
  admin.disconnect()
  return names
}

describe("docs/scaling.md", () => {
  it("wiring it with ioredis", async () => {
    const redisUrl = server.url
    const options = { baseUrl: mock.url, applicationId: mock.applicationId }
    const sealingKeyFromYourSecrets = Keys.sealingKey(3).toString("base64")
    // #region ioredis
    // import { Redis } from "ioredis"
    // import { ClinicalClient, TokenStore } from "effect-clinical"
    // import { Layer, Redacted } from "effect"

    // Fail fast while Redis is unreachable: no queue of commands to run late, no resending.
    const redis = new Redis(redisUrl, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false })
    // Say when Redis goes away (the client reconnects by itself; the library goes on without it).
    redis.on("error", (error) => console.error(`redis: ${error.message}`))
    const client = ClinicalClient.layerUndici(options).pipe(
      Layer.provide(TokenStore.layerRedis({
        redis: TokenStore.ioredis(redis),
        // `openssl rand -base64 32`, kept with your secrets: the same on every instance.
        sealingKey: Redacted.make(sealingKeyFromYourSecrets)
      }))
    )
    // #endregion
    // Called at once, the client still connecting: the store waits for it.
    const token = await Effect.runPromise(Effect.provide(TokenService.get, client))
    expect(token.storeGeneration).toBe(1)
    redis.disconnect()
    expect(await keys()).toHaveLength(2)
  })

  it("the README's wiring", async () => {
    const options = { baseUrl: mock.url, applicationId: mock.applicationId }
    const redisUrl = server.url
    const sealingKey = Redacted.make(Keys.sealingKey(5))
    // #region readme
    const redis = new Redis(redisUrl, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false })
    redis.on("error", (error) => console.error(`redis: ${error.message}`))
    // sealingKey: `openssl rand -base64 32`, the same on every instance
    const client = ClinicalClient.layerUndici(options).pipe(
      Layer.provide(TokenStore.layerRedis({ redis: TokenStore.ioredis(redis), sealingKey }))
    )
    // #endregion
    const token = await Effect.runPromise(Effect.provide(TokenService.get, client))
    expect(token.storeGeneration).toBe(1)
    redis.disconnect()
    expect(await keys()).toHaveLength(2)
  })

  it("wiring it with node-redis", async () => {
    const redisUrl = server.url
    const options = { baseUrl: mock.url, applicationId: mock.applicationId }
    // #region node-redis
    // import { createClient } from "redis"
    const redis = createClient({ url: redisUrl, disableOfflineQueue: true })
    // Without a listener, node-redis ends the process when Redis goes away.
    redis.on("error", (error) => console.error(`redis: ${error.message}`))
    await redis.connect()
    const client = ClinicalClient.layerUndici(options).pipe(
      Layer.provide(TokenStore.layerRedis({ redis: TokenStore.nodeRedis(redis) }))
    )
    // #endregion
    const token = await Effect.runPromise(Effect.provide(TokenService.get, client))
    expect(token.storeGeneration).toBe(1)
    redis.destroy()
    expect(await keys()).toHaveLength(2)
  })

  it("wiring it without Effect", async () => {
    const redisUrl = server.url
    const [baseUrl, applicationId] = [mock.url, mock.applicationId]
    const sealingKeyFromYourSecrets = Keys.sealingKey(4).toString("base64")
    // #region promise
    // import { Redis } from "ioredis"
    // import { createClinicalClient, TokenStore } from "effect-clinical/promise"
    const redis = new Redis(redisUrl, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false })
    redis.on("error", (error) => console.error(`redis: ${error.message}`))
    const clinical = createClinicalClient({
      baseUrl,
      applicationId,
      // The options of TokenStore.layerRedis: here a sealing key, and going on alone while Redis is away.
      tokenStore: { redis: TokenStore.ioredis(redis), sealingKey: sealingKeyFromYourSecrets, onUnavailable: "local" }
    })
    // #endregion
    expect((await clinical.token()).generation).toBe(1)
    await clinical.close()
    redis.disconnect()
    expect(await keys()).toHaveLength(2)
  })

  it("the ACL the page recommends is all the store needs", async () => {
    const acl = /^ACL SETUSER .*$/m.exec(page)?.[0]
    expect(acl, "docs/scaling.md has an ACL SETUSER line").toBeDefined()
    const admin = new Redis(server.port, "127.0.0.1")
    await admin.call(
      ...(acl!.split(" ") as [string, ...Array<string>]).map((word) =>
        word.replace(/^>example-password$/, ">s3cret")
      ) as [string, ...Array<string>]
    )
    const user = /^ACL SETUSER (\S+)/.exec(acl!)![1]!
    const limited = new Redis(server.port, "127.0.0.1", { username: user, password: "s3cret" })
    const client = ClinicalClient.layerUndici({ baseUrl: mock.url, applicationId: mock.applicationId }).pipe(
      Layer.provide(TokenStore.layerRedis({ redis: TokenStore.ioredis(limited), onUnavailable: "fail" }))
    )
    const token = await Effect.runPromise(
      Effect.provide(
        Effect.flatMap(
          TokenService.TokenService,
          (tokens) => Effect.flatMap(tokens.get, (first) => Effect.as(tokens.invalidate(first), first))
        ),
        client
      )
    )
    expect(token.storeGeneration).toBe(1)
    // The refusal dropped the token (the user may DEL); the generation stays.
    const names = await admin.keys("*")
    expect(names).toHaveLength(1)
    expect(names[0]).toMatch(/:generation$/)
    // Anything else is refused to that user.
    await expect(limited.call("SET", "somebody-else:key", "x")).rejects.toThrow(/NOPERM/)
    limited.disconnect()
    await admin.call("ACL", "DELUSER", user)
    admin.disconnect()
    await keys()
  })
})
