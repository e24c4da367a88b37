#!/usr/bin/env node
/**
 * The `effect-clinical` executable. The command line needs the library's peers, Node's services
 * (`@effect/platform-node`, an optional peer the library itself does without) included: when one
 * is not installed, it says which in one line, with the line that installs it, rather than
 * Node's `ERR_MODULE_NOT_FOUND` and its stack.
 */
import { missingPeerMessage } from "./peers.js"

try {
  await import("./main.js")
} catch (error) {
  const message = missingPeerMessage(error)
  if (message === undefined) throw error
  process.stderr.write(`${message}\n`)
  process.exitCode = 1
}
