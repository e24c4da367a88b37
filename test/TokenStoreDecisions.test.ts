/**
 * Token sharing's decisions as pure functions (core/token/tokenSharing.ts): what a read of the store
 * leads to, the windows of an adopted token, the wait on a lease, the polls' back-off, and what a
 * read of something unreadable stands for.
 */
import { describe, expect, it } from "@effect/vitest"
import { Redacted } from "effect"
import { TokenStore } from "effect-clinical"
import * as TokenSharing from "../core/token/tokenSharing.js"
import * as StoredEntry from "../src/internal/token/storedEntry.js"
import { MINUTE, SECOND } from "./support/tokenStoreFixtures.js"

describe("tokenSharing: the decisions", () => {
  const limits: TokenSharing.Limits = {
    hardWindowMillis: 30 * SECOND,
    maxLifetimeMillis: 24 * 60 * MINUTE,
    maxPauseMillis: MINUTE
  }
  const entry: StoredEntry.Entry = {
    token: Redacted.make("t"),
    lifetimeMillis: 60 * MINUTE,
    serverLifetimeMillis: 60 * MINUTE,
    serverClockSkewMillis: 1500
  }
  /** A stored token "f<generation>" (its fingerprint), and the lease's holder if any. */
  const snapshot = (
    stored: { generation: number; remainingMillis: number } | undefined,
    lease?: string
  ): TokenStore.Snapshot => ({
    stored: stored === undefined ? undefined : { entry, fingerprint: `f${stored.generation}`, ...stored },
    generation: stored?.generation ?? 0,
    lease
  })
  const fresh = snapshot({ generation: 3, remainingMillis: 40 * MINUTE })
  /** `found` with the token endpoint's pause recorded (and the lease's holder, if given). */
  const paused = (
    found: TokenStore.Snapshot,
    status: TokenStore.PauseStatus,
    remainingMillis: number,
    lease?: string
  ): TokenStore.Snapshot => ({ ...found, lease: lease ?? found.lease, paused: { status, remainingMillis } })

  const cases: ReadonlyArray<
    readonly [string, TokenStore.Snapshot, ReadonlyArray<string>, TokenSharing.Step<Redacted.Redacted<string>>]
  > = [
    ["nothing stored, lease free", snapshot(undefined), [], { _tag: "Lease" }],
    ["nothing stored, lease held", snapshot(undefined, "b"), [], { _tag: "Wait", holder: "b" }],
    ["a fresh token, none held", fresh, [], { _tag: "Adopt", issued: expect.objectContaining({ storeGeneration: 3 }) }],
    ["a fresh token, another held", fresh, ["f2"], { _tag: "Adopt", issued: expect.anything() }],
    ["the very token held", fresh, ["f3"], { _tag: "Lease" }],
    ["the very token just refused", fresh, ["f2", "f3"], { _tag: "Lease" }],
    ["the very token held, lease held", snapshot({ generation: 3, remainingMillis: 40 * MINUTE }, "b"), ["f3"], {
      _tag: "Wait",
      holder: "b"
    }],
    ["a token 1 ms outside its hard window", snapshot({ generation: 3, remainingMillis: 30 * SECOND + 1 }), ["f2"], {
      _tag: "Adopt",
      issued: expect.anything()
    }],
    ["a token at its hard window", snapshot({ generation: 3, remainingMillis: 30 * SECOND }), ["f2"], {
      _tag: "Lease"
    }],
    ["a token in its hard window, lease held", snapshot({ generation: 3, remainingMillis: SECOND }, "b"), ["f2"], {
      _tag: "Wait",
      holder: "b"
    }],
    ["nothing stored, the endpoint paused with 429", paused(snapshot(undefined), 429, 5 * SECOND), [], {
      _tag: "Paused",
      status: 429,
      remainingMillis: 5 * SECOND
    }],
    ["the very token held, paused with 503, lease held", paused(fresh, 503, SECOND, "b"), ["f3"], {
      _tag: "Paused",
      status: 503,
      remainingMillis: SECOND
    }],
    ["paused for longer than maxRetryAfter: the cap", paused(snapshot(undefined), 429, 2 * MINUTE), [], {
      _tag: "Paused",
      status: 429,
      remainingMillis: MINUTE
    }],
    ["a fresh token while paused: adopted, nothing asked", paused(fresh, 429, SECOND), ["f2"], {
      _tag: "Adopt",
      issued: expect.objectContaining({ storeGeneration: 3 })
    }]
  ]
  for (const [name, found, avoid, expected] of cases) {
    it(`${name}: ${expected._tag}`, () => {
      expect(TokenSharing.afterRead(found, avoid, 0, limits)).toEqual(expected)
    })
  }

  it("an adopted token expires when the store says, and its lifetime places its windows", () => {
    const issued = TokenSharing.adoptable(snapshot({ generation: 7, remainingMillis: 40 * MINUTE }), [], 1000, limits)
    expect(issued).toEqual({
      token: entry.token,
      sentAt: 1000 + 40 * MINUTE - 60 * MINUTE,
      lifetimeMillis: 60 * MINUTE,
      serverLifetimeMillis: 60 * MINUTE,
      serverClockSkewMillis: 1500,
      source: "store",
      storeGeneration: 7
    })
  })

  it("a stored lifetime over the cap is cut, and a time left over the lifetime is cut to it", () => {
    const capped = TokenSharing.adoptable(
      snapshot({ generation: 1, remainingMillis: 48 * 60 * MINUTE }),
      [],
      0,
      { ...limits, maxLifetimeMillis: 30 * MINUTE }
    )
    expect(capped).toMatchObject({ lifetimeMillis: 30 * MINUTE, sentAt: 0 })
  })

  it("the hard window of a short-lived stored token is a tenth of its lifetime", () => {
    const short = { ...entry, lifetimeMillis: 100 * SECOND, serverLifetimeMillis: 100 * SECOND }
    const found = (remainingMillis: number): TokenStore.Snapshot => ({
      stored: { entry: short, fingerprint: "f2", generation: 2, remainingMillis },
      generation: 2,
      lease: undefined
    })
    expect(TokenSharing.adoptable(found(10 * SECOND + 1), [], 0, limits)).toBeDefined()
    expect(TokenSharing.adoptable(found(10 * SECOND), [], 0, limits)).toBeUndefined()
  })

  it("a wait starts again when the lease changes hands, and ends after a whole lease with one holder", () => {
    expect(TokenSharing.waitStep(undefined, "b", 100, 1000)).toEqual({
      _tag: "Poll",
      waiting: { holder: "b", since: 100, churn: undefined }
    })
    const waiting = { holder: "b", since: 100, churn: undefined }
    expect(TokenSharing.waitStep(waiting, "b", 1099, 1000)).toEqual({ _tag: "Poll", waiting })
    expect(TokenSharing.waitStep(waiting, "b", 1100, 1000)).toEqual({ _tag: "AskAlone" })
    expect(TokenSharing.waitStep(waiting, "c", 5000, 1000)).toEqual({
      _tag: "Poll",
      waiting: { holder: "c", since: 5000, churn: { since: 5000, changes: 1 } }
    })
  })

  it("polls back off from 25 ms to 400 ms, half of each jittered", () => {
    expect([0, 1, 2, 3, 4, 5, 9].map((poll) => TokenSharing.pollDelayMillis(poll, 0))).toEqual([
      13,
      25,
      50,
      100,
      200,
      200,
      200
    ])
    expect(TokenSharing.pollDelayMillis(0, 0.999)).toBe(25)
    expect(TokenSharing.pollDelayMillis(9, 0.999)).toBe(400)
  })

  it("a lease outlasts the token request it covers, with the store's read and publication", () => {
    expect(TokenSharing.leaseMillis(10 * SECOND, 250)).toBe(11_500)
    expect(TokenSharing.leaseMillis(10 * SECOND, Number.POSITIVE_INFINITY)).toBe(11_000)
  })
})

describe("unit: what a read of something unreadable stands for (issue 22)", () => {
  const limits = { hardWindowMillis: 30 * SECOND, maxLifetimeMillis: 24 * 60 * MINUTE, maxPauseMillis: MINUTE }
  const snapshot = (sealedOtherwise: boolean, remainingMillis: number): TokenStore.Snapshot => ({
    stored: undefined,
    generation: 3,
    lease: undefined,
    unreadable: { reason: "why", sealedOtherwise, remainingMillis }
  })

  it("another key's token with no more time than a token could have is a failure of the store (left to them)", () => {
    expect(TokenSharing.unreadableFailure(snapshot(true, 60 * MINUTE), limits)).toMatchObject({
      _tag: "TokenStoreError",
      reason: "Unreadable",
      detail: "why"
    })
    expect(TokenSharing.unreadableFailure(snapshot(true, limits.maxLifetimeMillis), limits)).toBeDefined()
  })

  it("anything else is no one's: no failure, and the next publication replaces it", () => {
    expect(TokenSharing.unreadableFailure(snapshot(true, limits.maxLifetimeMillis + 1), limits)).toBeUndefined()
    expect(TokenSharing.unreadableFailure(snapshot(false, 60 * MINUTE), limits)).toBeUndefined()
    expect(TokenSharing.unreadableFailure(snapshot(true, Infinity), limits)).toBeUndefined()
    expect(TokenSharing.unreadableFailure({ stored: undefined, generation: 0, lease: undefined }, limits))
      .toBeUndefined()
  })
})
