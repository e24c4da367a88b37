/**
 * An Effect 4 Schema decode failure described by where and how it failed, never by the value found
 * (the words and the text are the core's, core/call/decodeFailure.ts, alike in both lines).
 */
import type * as SchemaIssue from "effect/SchemaIssue"
import { describeLeaves, ISSUE_WORDS, type Leaf } from "../../../../core/call/decodeFailure.js"

/** The failures of a decode, where they are and what kind; never the value found there. */
const leaves = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>, out: Array<Leaf>): void => {
  switch (issue._tag) {
    case "InvalidType":
      return void out.push({ path, words: ISSUE_WORDS.Type })
    case "InvalidValue":
      return void out.push({ path, words: ISSUE_WORDS.Refinement })
    case "MissingKey":
      return void out.push({ path, words: ISSUE_WORDS.Missing })
    case "UnexpectedKey":
      return void out.push({ path, words: ISSUE_WORDS.Unexpected })
    case "Forbidden":
      return void out.push({ path, words: ISSUE_WORDS.Forbidden })
    case "OneOf":
      return void out.push({ path, words: ISSUE_WORDS.OneOf })
    case "Pointer":
      return leaves(issue.issue, [...path, ...issue.path], out)
    case "Filter":
    case "Encoding":
      return leaves(issue.issue, path, out)
    case "Composite":
      for (const inner of issue.issues) leaves(inner, path, out)
      return
    case "AnyOf":
      // No alternative matched: each one's failures, or the value's type when there were none.
      if (issue.issues.length === 0) return void out.push({ path, words: ISSUE_WORDS.Type })
      for (const inner of issue.issues) leaves(inner, path, out)
      return
  }
}

/** Describes a decode failure under `root` (the collection's name): at most five failures listed. */
export const describeIssue = (issue: SchemaIssue.Issue, root: string): string => {
  const found: Array<Leaf> = []
  leaves(issue, [], found)
  return describeLeaves(found, root)
}
