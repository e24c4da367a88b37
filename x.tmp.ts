import { Config, ConfigProvider, Effect } from "effect"
import { InvalidConfig, ApiError } from "./src/ClinicalError.js"
console.log(String(new InvalidConfig({ setting: "CLINICAL_BASE_URL", reason: "is not set" })))
console.log(String(new ApiError({ operation: "medications", status: 400, errorType: "X", errorMessage: "y" })))
const e = Effect.runSync(Effect.flip(Config.string("CLINICAL_PERSON_UID").pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))))
console.log(String(e), "|", (e as any).message)
