/**
 * Persons made up by the thousand, for trials at scale (`mock-server --persons N`, a queue of
 * 100,000): the same N persons every time, each with a unique PersonUid (44 characters of base64,
 * shaped like the service's) and pass code, a date of birth, and a few records drawn from the
 * fixture's invented ones. No real patient is described.
 */
import { FIXTURE_PERSONS, type MockMedication, type MockPerson } from "./fixture.js"
import { seededRandom } from "./seeded.js"

/** Most persons a mock makes up: about 30 MB of memory for them all. */
export const MAX_GENERATED_PERSONS = 100_000

const MEDICATIONS: ReadonlyArray<MockMedication> = FIXTURE_PERSONS.flatMap((person) => person.medications)
const LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

const two = (n: number) => String(n).padStart(2, "0")

/** A pass code unique to `index` (below 10^4 x 26^4): `AB-1234-CD`. */
const passCodeOf = (index: number): string => {
  let rest = Math.floor(index / 10_000)
  const letters: Array<string> = []
  for (let i = 0; i < 4; i++) {
    letters.push(LETTERS[rest % 26]!)
    rest = Math.floor(rest / 26)
  }
  return `${letters[0]}${letters[1]}-${String(index % 10_000).padStart(4, "0")}-${letters[2]}${letters[3]}`
}

/** The person at `index` (from 0): the same for the same index, always. */
export const generatedPerson = (index: number): MockPerson => {
  const random = seededRandom(0x9e3779b1 ^ index)
  const bytes = Buffer.alloc(32)
  // The index in the first four bytes makes every PersonUid unique; the rest is noise.
  bytes.writeUInt32BE(index >>> 0, 0)
  for (let i = 4; i < 32; i++) bytes[i] = Math.floor(random() * 256)
  const medications = Array.from(
    { length: 1 + Math.floor(random() * 4) },
    () => MEDICATIONS[Math.floor(random() * MEDICATIONS.length)]!
  )
  const like = FIXTURE_PERSONS[index % FIXTURE_PERSONS.length]!
  return {
    personUid: bytes.toString("base64"),
    passCode: passCodeOf(index),
    dateOfBirth: `${two(1 + Math.floor(random() * 12))}/${two(1 + Math.floor(random() * 28))}/${
      1930 + Math.floor(random() * 76)
    }`,
    displayName: `Generated person ${index + 1}`,
    medications,
    ethnicities: like.ethnicities,
    detailedEthnicities: like.detailedEthnicities,
    uniqueDeviceIdentifiers: like.uniqueDeviceIdentifiers
  }
}

/** The first `count` generated persons (1 to {@link MAX_GENERATED_PERSONS}; else a RangeError). */
export const generatedPersons = (count: number): ReadonlyArray<MockPerson> => {
  if (!Number.isInteger(count) || count < 1 || count > MAX_GENERATED_PERSONS) {
    throw new RangeError(`the count of made-up persons must be a whole number from 1 to ${MAX_GENERATED_PERSONS}`)
  }
  return Array.from({ length: count }, (_, index) => generatedPerson(index))
}
