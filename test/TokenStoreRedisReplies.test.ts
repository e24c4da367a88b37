/**
 * The Redis store's side of the wire (src/internal/token/redisTokenStore.ts, core/token/redisReady.ts):
 * a client still making its first connection, its replies read, and its scripts sent (issues 23 and
 * 24), over a fake send function.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { firstConnection } from "../core/token/redisReady.js"
import * as RedisTokenStore from "../src/internal/token/redisTokenStore.js"
import * as StoredEntry from "../src/internal/token/storedEntry.js"
import { entryOf } from "./support/tokenStoreFixtures.js"

describe("a Redis client still making its first connection (issue 23)", () => {
  it("is waited for until ready, error or end; then never again; no listener is left", async () => {
    const { EventEmitter } = await import("node:events")
    for (const event of ["ready", "error", "end"]) {
      const client = Object.assign(new EventEmitter(), { status: "connecting" })
      const ready = firstConnection(client, () => client.status !== "ready")
      let settled = false
      const waiting = ready().then(() => (settled = true))
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(settled, event).toBe(false)
      if (event === "ready") client.status = "ready"
      client.emit(event, new Error("refused"))
      await waiting
      expect(["ready", "error", "end"].map((name) => client.listenerCount(name))).toEqual([0, 0, 0])
    }
    // Ready once: a later loss of the connection is an outage, not waited for.
    const client = Object.assign(new EventEmitter(), { status: "ready" })
    const ready = firstConnection(client, () => client.status !== "ready")
    await ready()
    client.status = "reconnecting"
    let settled = false
    await Promise.race([ready().then(() => (settled = true)), new Promise((resolve) => setTimeout(resolve, 20))])
    expect(settled).toBe(true)
  })
})

describe("the Redis store's replies read, and its scripts sent (issue 24's mutation run)", () => {
  const token = "abc.DEF"
  const entry = entryOf(token)
  const value = StoredEntry.encode(entry, undefined, "k")
  const read = (reply: unknown) =>
    Either.match(RedisTokenStore.snapshotOf(reply, undefined, "k"), {
      onLeft: (error) => `${error.operation} ${error.reason}: ${error.detail}`,
      onRight: (snapshot) => ({
        generation: snapshot.generation,
        lease: snapshot.lease,
        stored: snapshot.stored === undefined
          ? undefined
          : [snapshot.stored.generation, snapshot.stored.remainingMillis],
        unreadable: snapshot.unreadable?.reason,
        paused: snapshot.paused
      })
    })

  it.each(
    [
      ["a token, its TTL, its generation and no lease", [value, 5000, "3", null, null, -2], {
        generation: 3,
        lease: undefined,
        stored: [3, 5000],
        unreadable: undefined
      }],
      ["the TTL as text, the generation as an integer, a lease", [value, "5000", 3, "owner-1", null, -2], {
        generation: 3,
        lease: "owner-1",
        stored: [3, 5000],
        unreadable: undefined
      }],
      ["nothing stored yet", [null, -2, null, null, null, -2], {
        generation: 0,
        lease: undefined,
        stored: undefined,
        unreadable: undefined
      }],
      ["a value without a TTL (written by hand)", [value, -1, "2", null, null, -2], {
        generation: 2,
        lease: undefined,
        stored: undefined,
        unreadable: undefined
      }],
      ["a TTL of 0", [value, 0, "2", null, null, -2], {
        generation: 2,
        lease: undefined,
        stored: undefined,
        unreadable: undefined
      }],
      ["a value that is not text", [5, 5000, "2", null, null, -2], {
        generation: 2,
        lease: undefined,
        stored: undefined,
        unreadable: undefined
      }],
      ["generation 0 as text", [null, -2, "0", null, null, -2], {
        generation: 0,
        lease: undefined,
        stored: undefined,
        unreadable: undefined
      }],
      ...(["-1", "1.5", "x1", "1x", "1234567890123456", ""] as const).map((generation) =>
        [`a generation of ${JSON.stringify(generation)}`, [value, 5000, generation, null, null, -2], {
          generation: -1,
          lease: undefined,
          stored: undefined,
          unreadable: "the stored generation is not a number"
        }] as const
      ),
      ["a negative integer generation", [value, 5000, -4, null, null, -2], {
        generation: -1,
        lease: undefined,
        stored: undefined,
        unreadable: "the stored generation is not a number"
      }],
      ["a value no instance wrote", ["planted", 5000, "1", null, null, -2], {
        generation: 1,
        lease: undefined,
        stored: undefined,
        unreadable: "the stored token has no fingerprint"
      }],
      ["a generation of two digits", [value, 5000, "12", null, null, -2], {
        generation: 12,
        lease: undefined,
        stored: [12, 5000],
        unreadable: undefined
      }],
      ["a generation in a list", [value, 5000, [5], null, null, -2], {
        generation: -1,
        lease: undefined,
        stored: undefined,
        unreadable: "the stored generation is not a number"
      }],
      ["a generation a client gives as undefined", [null, -2, undefined, null, null, -2], {
        generation: 0,
        lease: undefined,
        stored: undefined,
        unreadable: undefined
      }],
      ["three items", [value, 5000, "1"], "token Unreadable: the store's reply is not the expected list"],
      ["a pause of 429 with its TTL", [value, 5000, "3", null, "429", 3000], {
        generation: 3,
        lease: undefined,
        stored: [3, 5000],
        unreadable: undefined,
        paused: { status: 429, remainingMillis: 3000 }
      }],
      ["a pause of 503, its TTL as text, beside a generation no instance can read", [
        null,
        -2,
        "x",
        null,
        "503",
        "2500"
      ], {
        generation: -1,
        lease: undefined,
        stored: undefined,
        unreadable: "the stored generation is not a number",
        paused: { status: 503, remainingMillis: 2500 }
      }],
      ...([["429", -1], ["429", 0], ["500", 3000], ["", 3000], [429, 3000], [null, 3000]] as const).map((
        [pause, ttl]
      ) =>
        [`a pause of ${JSON.stringify(pause)} with a TTL of ${ttl}: none`, [null, -2, "1", null, pause, ttl], {
          generation: 1,
          lease: undefined,
          stored: undefined,
          unreadable: undefined,
          paused: undefined
        }] as const
      ),
      [
        "four items (no pause)",
        [value, 5000, "1", null],
        "token Unreadable: the store's reply is not the expected list"
      ],
      [
        "seven items",
        [value, 5000, "1", null, null, -2, null],
        "token Unreadable: the store's reply is not the expected list"
      ],
      ["not a list", "OK", "token Unreadable: the store's reply is not the expected list"]
    ] as const
  )("a READ reply of %s", (_, reply, expected) => {
    expect(read(reply)).toEqual(expected)
  })

  /** A Redis port over a send function that answers from `answer`, recording each command. */
  const port = (answer: (command: ReadonlyArray<string>) => unknown) => {
    const sent: Array<ReadonlyArray<string>> = []
    const commands = RedisTokenStore.fromSend(async (command) => {
      sent.push(command)
      const reply = answer(command)
      if (reply instanceof Error) throw reply
      return reply
    })
    return { commands, sent }
  }
  const settings = {
    keyPrefix: "p",
    sealingKey: undefined,
    timeoutMillis: 1000,
    retryAfterMillis: 1000,
    onUnavailable: "local"
  } as const

  it("a script is sent by its SHA-1, and by its source only when Redis answers NOSCRIPT", async () => {
    const script = RedisTokenStore.redisScript("return 1")
    const missing = port((command) => (command[0] === "EVALSHA" ? new Error("NOSCRIPT No matching script") : 1))
    expect(await missing.commands.script(script, ["k"], ["a"])).toBe(1)
    expect(missing.sent).toEqual([["EVALSHA", script.sha1, "1", "k", "a"], ["EVAL", "return 1", "1", "k", "a"]])
    // Any other failure is the call's: not sent again.
    const down = port(() => new Error("ECONNRESET"))
    await expect(down.commands.script(script, ["k"], [])).rejects.toThrow("ECONNRESET")
    expect(down.sent).toHaveLength(1)
    const odd = port(() => "NOSCRIPT as a reply, not an error")
    expect(await odd.commands.script(script, [], [])).toBe("NOSCRIPT as a reply, not an error")
    const thrownText = RedisTokenStore.fromSend(() => Promise.reject("NOSCRIPT but a string"))
    await expect(thrownText.script(script, [], [])).rejects.toBe("NOSCRIPT but a string")
    const thrownNull = RedisTokenStore.fromSend(() => Promise.reject(null))
    await expect(thrownNull.script(script, [], [])).rejects.toBe(null)
    // Redis knows a script by the hex SHA-1 of its source.
    expect(script.sha1).toBe("e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
  })

  it.effect("a client that says when it is connected is waited for through the store's ready; one that does not, not", () =>
    Effect.gen(function*() {
      let connected = false
      const { commands } = port(() => 1)
      const waiting = RedisTokenStore.make({
        ...commands,
        ready: () => new Promise<void>((resolve) => setTimeout(() => resolve(void (connected = true)), 10))
      }, settings)
      yield* waiting.ready!
      expect(connected).toBe(true)
      expect(RedisTokenStore.make(commands, settings).ready).toBeUndefined()
    }))

  it.effect("a lease is given back with its owner named (the script releases only the owner's)", () =>
    Effect.gen(function*() {
      const { commands, sent } = port(() => 1)
      yield* RedisTokenStore.make(commands, settings).releaseLease("key", "owner-7")
      expect(sent[0]!.slice(2)).toEqual(["1", "p:{key}:lease", "owner-7"])
    }))

  it.effect("a publication's reply: published, lost, or not what a publication answers", () =>
    Effect.gen(function*() {
      const publishWith = (reply: unknown) =>
        Effect.either(RedisTokenStore.make(port(() => reply).commands, settings).publish("key", 2, entry, 1000, "me"))
      expect(yield* publishWith([1, "3"])).toEqual(Either.right(3))
      expect(yield* publishWith([0, 5])).toEqual(Either.right(undefined))
      for (const reply of [[1], [1, "3", "x"], "OK", null]) {
        expect(yield* publishWith(reply)).toMatchObject(Either.left({
          operation: "token",
          reason: "Unreadable",
          detail: "the store's reply to a publication is not the expected list"
        }))
      }
      expect(yield* publishWith([1, "three"])).toMatchObject(Either.left({
        reason: "Unreadable",
        detail: "the stored generation is not a number"
      }))
      // What went out: the keys of this client, the value, the TTL rounded up and the owner.
      const { commands, sent } = port(() => [1, "3"])
      yield* RedisTokenStore.make(commands, settings).publish("key", 2, entry, 999.5, "me")
      expect(sent[0]!.slice(2)).toEqual([
        "3",
        "p:{key}:token",
        "p:{key}:generation",
        "p:{key}:lease",
        "2",
        expect.stringMatching(/^[0-9a-f]{32}\|\{"token":"abc\.DEF"/),
        "1000",
        "me"
      ])
    }))

  it.effect("a client's failure is Unavailable, its text scrubbed of what the command carried", () =>
    Effect.gen(function*() {
      const echo = port((command) => new Error(`ERR in ${command.join(" ")}`))
      const error = yield* Effect.flip(
        RedisTokenStore.make(echo.commands, settings).publish("key", 0, entry, 1000, "me")
      )
      expect(error).toMatchObject({ operation: "token", reason: "Unavailable" })
      expect(error.detail).not.toContain(token)
      const odd = RedisTokenStore.make(RedisTokenStore.fromSend(() => Promise.reject(42)), settings)
      expect(yield* Effect.flip(odd.read("key"))).toMatchObject({ detail: "the Redis client failed" })
      const text = RedisTokenStore.make(RedisTokenStore.fromSend(() => Promise.reject("refused")), settings)
      expect(yield* Effect.flip(text.read("key"))).toMatchObject({ detail: "refused" })
    }))
})
