/**
 * Turning an HTTP response into a JSON value or this line's typed error (the core's rules:
 * core/call/response.ts), and describing a Schema decode failure without its values.
 */
import type * as ParseResult from "effect/ParseResult"
import type * as Redacted from "effect/Redacted"
import { describeLeaves, ISSUE_WORDS, type Leaf } from "../../../core/call/decodeFailure.js"
import * as Core from "../../../core/call/response.js"
import type { TransportResponse } from "../../HttpTransport.js"
import { reveal } from "../validate.js"

export { retryAfterMillis, serverText } from "../../../core/call/response.js"

/** What the caller knows about the exchange being read (see the core's), its secrets as this line holds them. */
export type Exchange = Core.Exchange<Redacted.Redacted<string>>

/** A secret of an exchange, revealed only to be searched for in server text. */
const revealSecret = (secret: Redacted.Redacted<string>): string | undefined => {
  const value = reveal(secret)
  return typeof value === "string" ? value : undefined
}

/**
 * The JSON body of a successful response, or the core's failure (`Failed`) the response stands for
 * (the core's rules: `readJson` in core/call/response.ts).
 */
export const readJson = (exchange: Exchange, response: TransportResponse): Core.Read =>
  Core.readJson(exchange, response, revealSecret)

/** The failures of a decode, where they are and what kind; never the value found there. */
const leaves = (issue: ParseResult.ParseIssue, path: ReadonlyArray<PropertyKey>, out: Array<Leaf>): void => {
  switch (issue._tag) {
    case "Type":
    case "Missing":
    case "Unexpected":
    case "Forbidden":
      out.push({ path, words: ISSUE_WORDS[issue._tag] })
      return
    case "Pointer":
      return leaves(issue.issue, [...path, ...(Array.isArray(issue.path) ? issue.path : [issue.path])], out)
    case "Refinement":
      return issue.kind === "Predicate"
        ? void out.push({ path, words: ISSUE_WORDS.Refinement })
        : leaves(issue.issue, path, out)
    case "Transformation":
      return issue.kind === "Transformation"
        ? void out.push({ path, words: ISSUE_WORDS.Transformation })
        : leaves(issue.issue, path, out)
    case "Composite":
      for (const inner of Array.isArray(issue.issues) ? issue.issues : [issue.issues]) leaves(inner, path, out)
      return
  }
}

/**
 * Describes a Schema decode failure by where and how it failed, never by the value found (values
 * here are tokens or patient data, and formatting one may recurse through it). At most five
 * failures are listed.
 */
export const describeParseError = (error: ParseResult.ParseError, root: string): string => {
  const found: Array<Leaf> = []
  leaves(error.issue, [], found)
  return describeLeaves(found, root)
}
