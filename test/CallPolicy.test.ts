/**
 * A call's attempts as a pure step function (`internal/callPolicy`): the deadline's edges, decided
 * in one place, as tables. (The effectful loop around it is tested in Resilience.test.ts.)
 */
import { describe, expect, it } from "@effect/vitest"
import { ClinicalError } from "effect-clinical"
import * as CallPolicy from "../core/call/callPolicy.js"
import * as RetryPolicy from "../core/call/retryPolicy.js"

const policy: CallPolicy.Policy = {
  maxRetries: 3,
  baseDelayMillis: 100,
  maxDelayMillis: 1_000,
  resendable: true,
  retryRateLimited: true
}
const at = { operation: "medications", method: "POST", url: "http://h/p" }
const busy = (retryAfterMillis: number) => new ClinicalError.ServerError({ ...at, status: 503, retryAfterMillis })
const failed = (error: ClinicalError.ClinicalError): CallPolicy.Outcome => ({ _tag: "Failed", error, sent: true })

describe("callPolicy.next: a wait is started only if it ends before the deadline", () => {
  const progress = CallPolicy.begin(0, 10_000)
  it("a Retry-After ending 1 ms before the deadline: retry after it", () => {
    const step = CallPolicy.next(policy, progress, failed(busy(9_999)), 0, 0)
    // The error rides with the step: the call fails with it if the budget cannot pay for the retry.
    expect(step).toMatchObject({ _tag: "Retry", delayMillis: 9_999, cause: "503", error: busy(9_999) })
  })
  it("a Retry-After ending exactly at the deadline: fail now, with the error that asked for it", () => {
    const step = CallPolicy.next(policy, progress, failed(busy(10_000)), 0, 0)
    expect(step).toEqual({ _tag: "Fail", progress, error: busy(10_000) })
  })
  it("the same wait asked later in the call: fail once now + wait reaches the deadline", () => {
    expect(CallPolicy.next(policy, progress, failed(busy(4_000)), 5_999, 0)._tag).toBe("Retry")
    expect(CallPolicy.next(policy, progress, failed(busy(4_000)), 6_000, 0)._tag).toBe("Fail")
  })
})

describe("callPolicy.next: retryRateLimited", () => {
  const progress = CallPolicy.begin(0, 10_000)
  const throttled = new ClinicalError.RateLimited({ ...at, status: 429, retryAfterMillis: 2_000 })
  it("true (the default): a 429 is retried after its Retry-After", () => {
    expect(CallPolicy.next(policy, progress, failed(throttled), 0, 0)).toMatchObject({
      _tag: "Retry",
      delayMillis: 2_000
    })
  })
  it("false: a 429 ends the call at once with it, Retry-After kept; a 503 is still retried", () => {
    const noThrottleRetry = { ...policy, retryRateLimited: false }
    expect(CallPolicy.next(noThrottleRetry, progress, failed(throttled), 0, 0)).toEqual({
      _tag: "Fail",
      progress,
      error: throttled
    })
    expect(CallPolicy.next(noThrottleRetry, progress, failed(busy(100)), 0, 0)._tag).toBe("Retry")
  })
})

describe("callPolicy.next: answers", () => {
  const progress = CallPolicy.begin(0, 10_000)
  it("a 2xx whose body reads is Done with its status and JSON", () => {
    const step = CallPolicy.next(
      policy,
      progress,
      { _tag: "Answered", status: 200, read: { _tag: "Right", right: { a: 1 } } },
      0,
      0
    )
    expect(step).toEqual({ _tag: "Done", progress, status: 200, json: { a: 1 } })
  })
  it("a body that does not read is its error, retried or not by its kind", () => {
    const error = new ClinicalError.ResponseDecodeError({ ...at, status: 200, reason: "r" })
    const step = CallPolicy.next(
      policy,
      progress,
      { _tag: "Answered", status: 200, read: { _tag: "Left", left: error } },
      0,
      0
    )
    expect(step).toEqual({ _tag: "Fail", progress, error })
  })
})

describe("callPolicy.budget: what an attempt has left", () => {
  const progress = CallPolicy.begin(0, 10_000)
  it("at the deadline exactly, or after: none", () => {
    expect(CallPolicy.budget(progress, 10_000, 5_000)).toEqual({ _tag: "Passed" })
    expect(CallPolicy.budget(progress, 10_001, 5_000)).toEqual({ _tag: "Passed" })
  })
  it("1 ms before: 1 ms, the deadline deciding", () => {
    expect(CallPolicy.budget(progress, 9_999, 5_000)).toEqual({
      _tag: "Left",
      remainingMillis: 1,
      timeoutMillis: 1,
      byDeadline: true
    })
  })
  it("exactly the attempt timeout left: the attempt timeout decides (a timeout then is the attempt's)", () => {
    expect(CallPolicy.budget(progress, 5_000, 5_000)).toEqual({
      _tag: "Left",
      remainingMillis: 5_000,
      timeoutMillis: 5_000,
      byDeadline: false
    })
  })
  it("far from it: the attempt timeout", () => {
    expect(CallPolicy.budget(progress, 0, 5_000)).toEqual({
      _tag: "Left",
      remainingMillis: 10_000,
      timeoutMillis: 5_000,
      byDeadline: false
    })
  })
})

describe("retryPolicy.retryCause: which failures are worth another attempt, by the label they count under", () => {
  const store = (reason: ClinicalError.TokenStoreError["reason"]) =>
    new ClinicalError.TokenStoreError({ operation: "token", reason, detail: "d" })
  const status = (tag: "RateLimited" | "ServerError", code: number) =>
    tag === "RateLimited"
      ? new ClinicalError.RateLimited({ ...at, status: code })
      : new ClinicalError.ServerError({ ...at, status: code })
  const transport = (reason: ClinicalError.TransportError["reason"]) =>
    new ClinicalError.TransportError({ ...at, reason, detail: "d" })
  const table: ReadonlyArray<readonly [string, ClinicalError.ClinicalError, string | undefined]> = [
    ["a network failure", transport("Network"), "network"],
    ["an attempt timeout", transport("Timeout"), "timeout"],
    ["the deadline", transport("Deadline"), undefined],
    ["a body too large", transport("ResponseTooLarge"), undefined],
    ["a followed redirect", transport("Redirected"), undefined],
    ["429", status("RateLimited", 429), "429"],
    ["500", status("ServerError", 500), "500"],
    ["501", status("ServerError", 501), undefined],
    ["502", status("ServerError", 502), "502"],
    ["503", status("ServerError", 503), "503"],
    ["504", status("ServerError", 504), "504"],
    ["505", status("ServerError", 505), undefined],
    ["a token store that timed out", store("Timeout"), "token-store"],
    ["a token store unavailable", store("Unavailable"), "token-store"],
    ["a token store value that cannot be read", store("Unreadable"), undefined],
    ["401", new ClinicalError.Unauthorized({ ...at, status: 401 }), undefined],
    ["400", new ClinicalError.BadRequest({ ...at, status: 400 }), undefined],
    [
      "Success: false",
      new ClinicalError.ApiError({ ...at, status: 200, errorType: null, errorMessage: null }),
      undefined
    ]
  ]
  for (const [name, error, cause] of table) {
    it(`${name}: ${cause ?? "not retried"}`, () => expect(RetryPolicy.retryCause(error)).toBe(cause))
  }

  it("only a 429 or a 5xx carries a Retry-After", () => {
    expect(RetryPolicy.retryAfterOf(new ClinicalError.ServerError({ ...at, status: 503, retryAfterMillis: 7 }))).toBe(7)
    expect(RetryPolicy.retryAfterOf(new ClinicalError.RateLimited({ ...at, status: 429, retryAfterMillis: 8 }))).toBe(8)
    expect(RetryPolicy.retryAfterOf(transport("Network"))).toBeUndefined()
  })
})
