/**
 * What the Redaction*.test.ts files share: the secrets they scrub (a GUID, a token, a pass code), the
 * exact search without redaction by shape, and the check that a scrub takes time linear in its text.
 */
import { expect } from "@effect/vitest"
import { MAX_SEARCHED, MAX_SECRET, redactor, scrub } from "../../src/internal/redaction/redaction.js"

export const redactEvery = (text: string, secret: string) => redactor([secret])(text)

/** The search for known secrets alone, where a test is about what it finds (and does not find) exactly. */
export const exact = { byShape: false } as const

export const GUID = "3F2504E0-4F89-11D3-9A0C-0305E82C3301"
export const TOKEN = "c2VjcmV0LXRva2Vu+/YWJj=="
export const PASS = "pass word/é"

/** The least of three timings of `run` (ms). */
const fastest = (run: () => unknown): number => {
  let least = Infinity
  for (let i = 0; i < 3; i++) {
    const started = performance.now()
    run()
    least = Math.min(least, performance.now() - started)
  }
  return least
}

/**
 * `scrub` takes about as long on `hostile` as on a plain text of the longest length it searches,
 * measured in the same moment (a loaded machine slows both): a search that backtracks took 23 s
 * on such a text, thousands of times the plain one, where a linear one stays within a few times.
 */
export const expectLinear = (hostile: () => unknown, what?: string): void => {
  const plain = "x".repeat(MAX_SEARCHED)
  const baseline = fastest(() => scrub(plain, [TOKEN, GUID, "y".repeat(MAX_SECRET)]))
  expect(fastest(hostile), what).toBeLessThan(100 * baseline + 50)
}
