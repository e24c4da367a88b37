/**
 * The packages the command line needs that an application installs itself (peers of the library),
 * each with the range of the Effect 3 line: an unpinned install now resolves Effect 4.
 */
export const PEERS: Readonly<Record<string, string>> = {
  "effect": "^3.22",
  "@effect/platform": "^0.97",
  "@effect/platform-node": "^0.108"
}

/** The one line to print when `error` is Node's failure to find one of {@link PEERS}; otherwise `undefined`. */
export const missingPeerMessage = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null || (error as { code?: unknown }).code !== "ERR_MODULE_NOT_FOUND") {
    return undefined
  }
  const name = /Cannot find package '([^']+)'/.exec(String((error as { message?: unknown }).message))?.[1]
  const range = name === undefined ? undefined : PEERS[name]
  if (name === undefined || range === undefined) return undefined
  return `effect-clinical: the command line needs ${name}, which is not installed here: ` +
    `npm install ${name}@${range}`
}
