/**
 * `node --import ./test/support/loadedModules.mjs ...`: writes `loaded <url>` on stderr for every
 * file module the process loads through the ES module loader (from the loader's own thread,
 * synchronously, so that none is lost at exit).
 */
import { register } from "node:module"

register(
  "data:text/javascript," + encodeURIComponent(`
import { writeSync } from "node:fs"
export async function load(url, context, next) {
  if (url.startsWith("file:")) writeSync(2, "loaded " + url + "\\n")
  return next(url, context)
}`)
)
