/**
 * Imported first by each of this line's entry points: on a Node.js below the line's floor (what
 * Effect 4's platform and undici 8 need), importing the package throws one clear error instead of
 * every call dying with a defect that names nothing.
 */
import { FLOORS, requireFloor } from "../../../core/nodeFloor.js"

requireFloor(
  "effect-clinical@4 (the Effect 4 line)",
  process.versions.node,
  FLOORS.effect4,
  `effect-clinical@3 (the Effect 3 line), which runs on Node.js ${FLOORS.effect3} or later`
)
