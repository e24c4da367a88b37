/**
 * The sharing machine (core/token/sharingMachine.ts) driven directly: a refresh through the
 * fleet's token store as events in and actions out, with no store, no Effect and no clock. The
 * runner that performs the actions (core/token/sharingRunner.ts) is run by each line's TokenStore
 * suite over its port.
 */
import { describe, expect, it } from "vitest"
import type { ClinicalError } from "../core/errors.js"
import { type Action, type Settings, SharingMachine } from "../core/token/sharingMachine.js"
import { CHURN_MILLIS, type IssuedToken, leaseMillis, pollDelayMillis } from "../core/token/tokenSharing.js"
import type { OnUnavailable, Snapshot } from "../core/token/tokenStore.js"

const MINUTE = 60_000
const LEASE = leaseMillis(10_000, 1_000)

const settingsOf = (onUnavailable: OnUnavailable = "local"): Settings<ClinicalError> => ({
  limits: { hardWindowMillis: 30_000, maxLifetimeMillis: 24 * 60 * MINUTE, maxPauseMillis: MINUTE },
  leaseMillis: LEASE,
  onUnavailable,
  url: "https://token.example/token",
  wrap: (error) => error
})

const entry = {
  token: "stored",
  lifetimeMillis: 60 * MINUTE,
  serverLifetimeMillis: 60 * MINUTE,
  serverClockSkewMillis: 0
}

/** The store with generation `generation`, a token "f<generation>" with `remainingMillis` left if given, and the lease's holder. */
const snapshot = (
  generation: number,
  { remainingMillis, lease }: { remainingMillis?: number; lease?: string } = {}
): Snapshot<string> => ({
  stored: remainingMillis === undefined
    ? undefined
    : {
      entry: { ...entry, token: `stored-${generation}` },
      fingerprint: `f${generation}`,
      generation,
      remainingMillis
    },
  generation,
  lease
})

const NOW = 5_000_000

/** A token the endpoint issued at `sentAt`. */
const issuedAt = (sentAt: number, lifetimeMillis = 60 * MINUTE): IssuedToken<string> => ({
  token: "requested",
  sentAt,
  lifetimeMillis,
  serverLifetimeMillis: lifetimeMillis,
  serverClockSkewMillis: 0,
  source: "server",
  storeGeneration: undefined
})

const storeDown: ClinicalError = { _tag: "TokenStoreError", operation: "token", reason: "Timeout", detail: "no answer" }
const refused: ClinicalError = {
  _tag: "TransportError",
  operation: "token",
  method: "POST",
  url: "u",
  requestSent: true,
  detail: "reset"
} as ClinicalError

const machineOf = (onUnavailable: OnUnavailable = "local", avoid: ReadonlyArray<string> = []) =>
  new SharingMachine<string, ClinicalError>(settingsOf(onUnavailable), avoid)

/** A machine past its first read of `found`: what it answered. */
const afterFirstRead = (found: Snapshot<string>, onUnavailable: OnUnavailable = "local") => {
  const machine = machineOf(onUnavailable)
  expect(machine.start()).toBe("Read")
  return [machine, machine.read(found, NOW)] as const
}

/** A machine that took the lease after reading `first`, at its second read. */
const leaseholder = (first: Snapshot<string>, onUnavailable: OnUnavailable = "local") => {
  const [machine, action] = afterFirstRead(first, onUnavailable)
  expect(action).toBe("Lease")
  expect(machine.leased(true)).toBe("Read")
  return machine
}

describe("the sharing machine: a token in the store", () => {
  it("a fresh stored token is adopted at the first read: no lease, no request", () => {
    const [machine, action] = afterFirstRead(snapshot(3, { remainingMillis: 40 * MINUTE }))
    expect(action).toBe("Adopted")
    expect(machine.issued).toMatchObject({ token: "stored-3", source: "store", storeGeneration: 3 })
  })

  it("the token being replaced is not adopted: the lease is taken", () => {
    const machine = machineOf("local", ["f3"])
    machine.start()
    expect(machine.read(snapshot(3, { remainingMillis: 40 * MINUTE }), NOW)).toBe("Lease")
  })

  it("while the fleet's pause runs the refresh fails with the endpoint's error, counting down, capped", () => {
    const [machine, action] = afterFirstRead({ ...snapshot(0), paused: { status: 429, remainingMillis: 10 * MINUTE } })
    expect(action).toBe("Fail")
    expect(machine.paused).toBe(true)
    expect(machine.error).toMatchObject({
      _tag: "RateLimited",
      status: 429,
      retryAfterMillis: MINUTE,
      url: "https://token.example/token"
    })
  })
})

describe("the sharing machine: the leaseholder", () => {
  it("reads again, requests, publishes over the generation it read, and ends with the published token", () => {
    const machine = leaseholder(snapshot(4))
    expect(machine.read(snapshot(4), NOW + 5)).toBe("Request")
    expect(machine.leaseholder).toBe(true)
    expect(machine.requested(issuedAt(NOW + 10), NOW + 200)).toBe("Publish")
    expect(machine.expected).toBe(4)
    expect(machine.ttlMillis).toBe(60 * MINUTE - 190)
    expect(machine.published(5)).toBe("Done")
    expect(machine.issued).toMatchObject({ token: "requested", storeGeneration: 5 })
  })

  it("a token published meanwhile is adopted after giving the lease back", () => {
    const machine = leaseholder(snapshot(4))
    expect(machine.read(snapshot(5, { remainingMillis: 50 * MINUTE }), NOW + 5)).toBe("Release")
    expect(machine.next()).toBe("Adopted")
    expect(machine.issued).toMatchObject({ token: "stored-5", storeGeneration: 5 })
  })

  it("a second read that fails: the first fences the publication", () => {
    const machine = leaseholder(snapshot(7))
    expect(machine.readFailed(storeDown)).toBe("Request")
    expect(machine.requested(issuedAt(NOW), NOW)).toBe("Publish")
    expect(machine.expected).toBe(7)
  })

  it("the second read's generation fences it when that read answers", () => {
    const machine = leaseholder(snapshot(7))
    machine.read(snapshot(8), NOW)
    machine.requested(issuedAt(NOW), NOW)
    expect(machine.expected).toBe(8)
  })

  it("a store holding what no instance reads is repaired, said first, then replaced", () => {
    const machine = leaseholder(snapshot(2))
    const unreadable = {
      ...snapshot(-1),
      unreadable: { reason: "garbage", sealedOtherwise: false, remainingMillis: 10 }
    }
    expect(machine.read(unreadable, NOW)).toBe("Repair")
    expect(machine.repairReason).toBe("garbage")
    expect(machine.next()).toBe("Request")
    expect(machine.leaseholder).toBe(true)
    machine.requested(issuedAt(NOW), NOW)
    expect(machine.expected).toBe(-1)
  })

  it("a lost publication reads the winner and ends with its token, not counted as adopted", () => {
    const machine = leaseholder(snapshot(4))
    machine.read(snapshot(4), NOW)
    machine.requested(issuedAt(NOW), NOW)
    expect(machine.published(undefined)).toBe("Read")
    expect(machine.read(snapshot(6, { remainingMillis: 50 * MINUTE }), NOW + 1)).toBe("Done")
    expect(machine.issued).toMatchObject({ token: "stored-6", storeGeneration: 6 })
  })

  it("a lost publication whose winner cannot be read or used keeps its own token", () => {
    const unreadableWinner = leaseholder(snapshot(4))
    unreadableWinner.read(snapshot(4), NOW)
    unreadableWinner.requested(issuedAt(NOW), NOW)
    unreadableWinner.published(undefined)
    expect(unreadableWinner.readFailed(storeDown)).toBe("Done")
    expect(unreadableWinner.issued).toMatchObject({ token: "requested", storeGeneration: undefined })

    const nearExpiry = leaseholder(snapshot(4))
    nearExpiry.read(snapshot(4), NOW)
    nearExpiry.requested(issuedAt(NOW), NOW)
    nearExpiry.published(undefined)
    expect(nearExpiry.read(snapshot(6, { remainingMillis: 1000 }), NOW)).toBe("Done")
    expect(nearExpiry.issued).toMatchObject({ token: "requested" })
  })

  it("a publication the store fails keeps the token and gives the lease back in the background", () => {
    const machine = leaseholder(snapshot(4))
    machine.read(snapshot(4), NOW)
    machine.requested(issuedAt(NOW), NOW)
    expect(machine.publishFailed()).toBe("ReleaseInBackground")
    expect(machine.next()).toBe("Done")
    expect(machine.issued).toMatchObject({ token: "requested", storeGeneration: undefined })
  })

  it("a token with no time left to publish only gives the lease back", () => {
    const machine = leaseholder(snapshot(4))
    machine.read(snapshot(4), NOW)
    expect(machine.requested(issuedAt(NOW - 60 * MINUTE), NOW)).toBe("Release")
    expect(machine.next()).toBe("Done")
    expect(machine.issued).toMatchObject({ token: "requested" })
  })

  it("a request that fails ends the refresh with its error", () => {
    const machine = leaseholder(snapshot(4))
    machine.read(snapshot(4), NOW)
    expect(machine.requestFailed(refused)).toBe("Fail")
    expect(machine.error).toBe(refused)
    expect(machine.paused).toBe(false)
  })

  it("a lease another instance took first: the store is read again, the poll count kept", () => {
    const [machine] = afterFirstRead(snapshot(0))
    expect(machine.leased(false)).toBe("Read")
    expect(machine.read(snapshot(0, { lease: "b" }), NOW)).toBe("Sleep")
    expect(machine.poll).toBe(0)
  })
})

describe("the sharing machine: waiting for another instance", () => {
  it("polls with the growing, jittered delay while the holder works", () => {
    const [machine, action] = afterFirstRead(snapshot(0, { lease: "b" }))
    expect(action).toBe("Sleep")
    expect(machine.sleepMillis(0.5)).toBe(pollDelayMillis(0, 0.5))
    expect(machine.woke()).toBe("Read")
    expect(machine.poll).toBe(1)
    expect(machine.read(snapshot(0, { lease: "b" }), NOW + 100)).toBe("Sleep")
    expect(machine.sleepMillis(0.5)).toBe(pollDelayMillis(1, 0.5))
    machine.woke()
    expect(machine.read(snapshot(1, { remainingMillis: 50 * MINUTE }), NOW + 200)).toBe("Adopted")
  })

  it("one holder for a whole lease: asks alone, then offers its token over the generation read", () => {
    const [machine] = afterFirstRead(snapshot(3, { lease: "b" }))
    machine.woke()
    expect(machine.read(snapshot(3, { lease: "b" }), NOW + LEASE - 1)).toBe("Sleep")
    machine.woke()
    expect(machine.read(snapshot(3, { lease: "b" }), NOW + LEASE)).toBe("Request")
    expect(machine.leaseholder).toBe(false)
    expect(machine.requested(issuedAt(NOW + LEASE), NOW + LEASE)).toBe("Publish")
    expect(machine.expected).toBe(3)
    // Offered, not owed: a failure keeps the token, with no lease to give back.
    expect(machine.publishFailed()).toBe("Done")
  })

  /** A wait on a lease that went from a to b to c, the last change a second after the first: what the machine answered. */
  const churning = (onUnavailable: OnUnavailable) => {
    const [machine] = afterFirstRead(snapshot(2, { lease: "a" }), onUnavailable)
    machine.woke()
    expect(machine.read(snapshot(2, { lease: "b" }), NOW + 10)).toBe("Sleep")
    machine.woke()
    expect(machine.read(snapshot(2, { lease: "c" }), NOW + 10 + CHURN_MILLIS - 1)).toBe("Sleep")
    machine.woke()
    return [machine, machine.read(snapshot(2, { lease: "c" }), NOW + 10 + CHURN_MILLIS)] as const
  }

  it("a lease changing hands for a second without a token: a failure of the store; fail-open then asks alone and offers its token in the background", () => {
    const [machine, action] = churning("local")
    expect(action).toBe("StoreFailed")
    expect(machine.storeError).toMatchObject({
      _tag: "TokenStoreError",
      reason: "Timeout",
      detail: expect.stringContaining("2 times")
    })
    expect(machine.next()).toBe("Request")
    expect(machine.leaseholder).toBe(false)
    expect(machine.requested(issuedAt(NOW), NOW)).toBe("PublishInBackground")
    expect(machine.expected).toBe(2)
    expect(machine.next()).toBe("Done")
  })

  it("after the churn, fail-closed gives back a lease it may hold and fails with the store's error", () => {
    const [machine, action] = churning("fail")
    expect(action).toBe("StoreFailed")
    expect(machine.next()).toBe("ReleaseInBackground")
    expect(machine.next()).toBe("Fail")
    expect(machine.error).toBe(machine.storeError)
  })
})

describe("the sharing machine: the store failing", () => {
  it("a first read that fails: fail-open asks alone and publishes nothing (no generation read)", () => {
    const machine = machineOf("local")
    machine.start()
    expect(machine.readFailed(storeDown)).toBe("Request")
    expect(machine.leaseholder).toBe(false)
    expect(machine.requested(issuedAt(NOW), NOW)).toBe("Done")
    expect(machine.issued).toMatchObject({ token: "requested" })
  })

  it("a first read that fails: fail-closed fails at once with the store's error", () => {
    const machine = machineOf("fail")
    machine.start()
    expect(machine.readFailed(storeDown)).toBe("Fail")
    expect(machine.error).toBe(storeDown)
  })

  it("a lease that could not be had (it may have been taken): fail-open asks alone, then offers the token", () => {
    const [machine] = afterFirstRead(snapshot(9))
    expect(machine.leaseFailed(storeDown)).toBe("Request")
    expect(machine.requested(issuedAt(NOW), NOW)).toBe("PublishInBackground")
    expect(machine.expected).toBe(9)
    expect(machine.next()).toBe("Done")
  })

  it("a lease that could not be had: fail-closed gives it back in the background and fails", () => {
    const [machine] = afterFirstRead(snapshot(9), "fail")
    expect(machine.leaseFailed(storeDown)).toBe("ReleaseInBackground")
    expect(machine.next()).toBe("Fail")
    expect(machine.error).toBe(storeDown)
  })

  it("a request alone that fails ends the refresh with its error", () => {
    const machine = machineOf("local")
    machine.start()
    machine.readFailed(storeDown)
    expect(machine.requestFailed(refused)).toBe("Fail")
    expect(machine.error).toBe(refused)
  })
})

describe("the sharing machine: a publication in the background", () => {
  const publishing = (sentAt = NOW): readonly [SharingMachine<string, ClinicalError>, Action] =>
    SharingMachine.publishing(settingsOf(), issuedAt(sentAt), 11, NOW + 50)

  it("publishes over the generation given, for the time the token has left", () => {
    const [machine, action] = publishing()
    expect(action).toBe("Publish")
    expect(machine.expected).toBe(11)
    expect(machine.ttlMillis).toBe(60 * MINUTE - 50)
    expect(machine.published(12)).toBe("Done")
    expect(machine.issued).toMatchObject({ storeGeneration: 12 })
  })

  it("lost: reads the winner, whatever its fingerprint", () => {
    const [machine] = publishing()
    expect(machine.published(undefined)).toBe("Read")
    expect(machine.read(snapshot(12, { remainingMillis: 50 * MINUTE }), NOW)).toBe("Done")
    expect(machine.issued).toMatchObject({ token: "stored-12" })
  })

  it("failed: ends, with no lease to give back", () => {
    const [machine] = publishing()
    expect(machine.publishFailed()).toBe("Done")
  })

  it("nothing left to publish: gives the lease back only", () => {
    const [machine, action] = publishing(NOW - 60 * MINUTE)
    expect(action).toBe("Release")
    expect(machine.next()).toBe("Done")
  })
})
