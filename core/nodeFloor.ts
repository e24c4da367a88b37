/**
 * The Node.js version a line needs, checked where its entry points are imported: below its floor,
 * a line's Effect fails in its first call with a defect that names nothing (on Node 20, Effect 4's
 * `TypeError: Cannot read properties of undefined (reading 'bind')`), and npm's EBADENGINE is only
 * a warning. One clear error at import instead, naming both versions.
 */

/**
 * The least Node.js each line runs on: its package.json's `engines` (a test keeps them equal). The
 * Effect 4 line's is what Effect 4's platform and its undici 8 need.
 */
export const FLOORS = { effect3: "20.19.0", effect4: "22.19.0" } as const

/** A version's numbers (`v22.19.0`, `22.19.0`, `22.19.0-nightly...`), or `undefined` when it does not read as one. */
export const versionOf = (text: string): readonly [number, number, number] | undefined => {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(text)
  return match === null ? undefined : [Number(match[1]), Number(match[2]), Number(match[3])]
}

/** Whether `running` is below `floor` (an unreadable running version is not refused: it may be a new form). */
export const isBelow = (running: string, floor: string): boolean => {
  const have = versionOf(running)
  const need = versionOf(floor)
  if (have === undefined || need === undefined) return false
  for (let i = 0; i < 3; i++) {
    if (have[i] !== need[i]) return have[i]! < need[i]!
  }
  return false
}

/** What a line below its floor says: the package, the version running, the version needed, and what to do. */
export const belowFloorMessage = (packageName: string, running: string, floor: string, instead: string): string =>
  `${packageName} needs Node.js ${floor} or later, and this is Node.js ${running.replace(/^v/, "")}. ` +
  `Run it on Node.js ${floor} or later, or use ${instead}.`

/** Throws the error of {@link belowFloorMessage} when `running` is below `floor`. */
export const requireFloor = (packageName: string, running: string, floor: string, instead: string): void => {
  if (isBelow(running, floor)) throw new Error(belowFloorMessage(packageName, running, floor, instead))
}
