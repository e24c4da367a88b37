/**
 * The mock server's built-in persons and medications.
 *
 * INVENTED DATA. The service does not publish its medication or device fields, so these records
 * are our own: realistic drug names, strengths and instructions, with RxNorm-style codes that are
 * not to be relied on clinically; device identifiers in the GS1 UDI form with made-up numbers. The
 * ethnicity items use the documented `{ Name, Code }` shape with CDC race and ethnicity codes. No
 * real patient or device is described.
 */

/** One medication as the mock serves it (PascalCase, as the service writes its other payloads). */
export interface MockMedication {
  readonly Name: string
  readonly Strength: string
  readonly Form: string
  readonly Instructions: string
  /** `YYYY-MM-DD`. */
  readonly StartDate: string
  readonly EndDate: string | null
  readonly Status: "Active" | "Completed"
  readonly RxNormCode: string
  readonly Prescriber: string
}

/** An ethnicity, as the service documents its items. */
export interface MockEthnicity {
  readonly Name: string
  readonly Code: string
}

/** One device (the real item fields are not published: these are invented). */
export interface MockDevice {
  readonly UniqueDeviceIdentifier: string
  readonly DeviceIdentifier: string
  readonly Description: string
  /** `YYYY-MM-DD`. */
  readonly ImplantDate: string
  readonly Status: "Active" | "Inactive"
}

/** One person the mock knows. */
export interface MockPerson {
  /** The encrypted identifier data requests carry. */
  readonly personUid: string
  /** What the patient received from their doctor, for the authenticate operation. */
  readonly passCode: string
  /** `MM/DD/YYYY`, as the service's sample writes it. */
  readonly dateOfBirth: string
  /** A display name for demos; the service never sends it. */
  readonly displayName: string
  readonly medications: ReadonlyArray<MockMedication>
  /** Answered by the ethnicity operation; none when absent. */
  readonly ethnicities?: ReadonlyArray<MockEthnicity> | undefined
  /** Answered by the detailed ethnicity operation; none when absent. */
  readonly detailedEthnicities?: ReadonlyArray<MockEthnicity> | undefined
  /** Answered by the unique device identifier operation; none when absent. */
  readonly uniqueDeviceIdentifiers?: ReadonlyArray<MockDevice> | undefined
}

/** The ApplicationId the mock accepts by default. A made-up GUID. */
export const DEMO_APPLICATION_ID = "5e0c2b8a-9d7f-4c1e-a3b6-0f2d4e6a8c10"

const med = (
  Name: string,
  Strength: string,
  Form: string,
  Instructions: string,
  StartDate: string,
  RxNormCode: string,
  Prescriber: string,
  EndDate: string | null = null
): MockMedication => ({
  Name,
  Strength,
  Form,
  Instructions,
  StartDate,
  EndDate,
  Status: EndDate === null ? "Active" : "Completed",
  RxNormCode,
  Prescriber
})

const NOT_HISPANIC: MockEthnicity = { Name: "Not Hispanic or Latino", Code: "2186-5" }

/** Three persons with two to six medications each, their ethnicities, and a device for two of them. */
export const FIXTURE_PERSONS: ReadonlyArray<MockPerson> = [
  {
    personUid: "q8Vf2m3Kx/1Zb+9TnP0aLwH7cR4sE6uJ2yG5iD8oQ1w=",
    passCode: "EW-2719-KQ",
    dateOfBirth: "03/14/1945",
    displayName: "Eleanor Whitfield (fixture)",
    ethnicities: [NOT_HISPANIC],
    detailedEthnicities: [],
    uniqueDeviceIdentifiers: [{
      UniqueDeviceIdentifier: "(01)00812345000019(17)310101(10)PM4471(21)SN0099123",
      DeviceIdentifier: "00812345000019",
      Description: "Implantable cardiac pacemaker, dual chamber (fixture)",
      ImplantDate: "2022-08-17",
      Status: "Active"
    }],
    medications: [
      med(
        "Lisinopril",
        "10 mg",
        "Tablet",
        "Take 1 tablet by mouth once daily",
        "2019-04-02",
        "314076",
        "Dr. A. Okafor"
      ),
      med(
        "Metformin Hydrochloride",
        "500 mg",
        "Tablet",
        "Take 1 tablet by mouth twice daily with meals",
        "2020-01-15",
        "861007",
        "Dr. A. Okafor"
      ),
      med(
        "Atorvastatin Calcium",
        "20 mg",
        "Tablet",
        "Take 1 tablet by mouth at bedtime",
        "2021-06-30",
        "617310",
        "Dr. A. Okafor"
      ),
      med("Aspirin", "81 mg", "Chewable tablet", "Chew 1 tablet once daily", "2021-06-30", "243670", "Dr. A. Okafor"),
      med(
        "Amoxicillin",
        "500 mg",
        "Capsule",
        "Take 1 capsule by mouth every 8 hours for 10 days",
        "2024-02-10",
        "308191",
        "Dr. L. Brenner",
        "2024-02-20"
      )
    ]
  },
  {
    personUid: "Zm9vYmFy+M2QxNzQ4/cGVyc29uLTAwMg==RkxVSUQ",
    passCode: "MD-5531-TX",
    dateOfBirth: "11/02/1958",
    displayName: "Marcus Delgado (fixture)",
    ethnicities: [{ Name: "Hispanic or Latino", Code: "2135-2" }],
    detailedEthnicities: [{ Name: "Mexican", Code: "2148-5" }],
    uniqueDeviceIdentifiers: [{
      UniqueDeviceIdentifier: "(01)00812345000026(17)330630(10)KN2207(21)SN0045567",
      DeviceIdentifier: "00812345000026",
      Description: "Total knee replacement, tibial component (fixture)",
      ImplantDate: "2021-03-02",
      Status: "Active"
    }],
    medications: [
      med(
        "Levothyroxine Sodium",
        "75 mcg",
        "Tablet",
        "Take 1 tablet by mouth every morning on an empty stomach",
        "2016-09-12",
        "966247",
        "Dr. S. Hwang"
      ),
      med(
        "Omeprazole",
        "20 mg",
        "Delayed-release capsule",
        "Take 1 capsule by mouth daily before breakfast",
        "2023-03-08",
        "402014",
        "Dr. S. Hwang"
      )
    ]
  },
  {
    personUid: "c2VjcmV0/UHJpeWE+UmFtYW4tMDAz=9a8b7c6d5e4f",
    passCode: "PR-8804-LM",
    dateOfBirth: "07/29/1972",
    displayName: "Priya Raman (fixture)",
    ethnicities: [NOT_HISPANIC],
    detailedEthnicities: [{ Name: "Asian Indian", Code: "2029-7" }],
    uniqueDeviceIdentifiers: [],
    medications: [
      med(
        "Albuterol Sulfate HFA",
        "90 mcg/actuation",
        "Inhaler",
        "Inhale 2 puffs every 4 to 6 hours as needed for wheezing",
        "2018-05-21",
        "745679",
        "Dr. M. Castillo"
      ),
      med(
        "Fluticasone Propionate",
        "110 mcg/actuation",
        "Inhaler",
        "Inhale 2 puffs twice daily; rinse mouth after use",
        "2018-05-21",
        "896188",
        "Dr. M. Castillo"
      ),
      med(
        "Montelukast Sodium",
        "10 mg",
        "Tablet",
        "Take 1 tablet by mouth every evening",
        "2019-10-03",
        "997488",
        "Dr. M. Castillo"
      ),
      med(
        "Cetirizine Hydrochloride",
        "10 mg",
        "Tablet",
        "Take 1 tablet daily",
        "2022-04-14",
        "1014678",
        "Dr. M. Castillo"
      ),
      med(
        "Prednisone",
        "10 mg",
        "Tablet",
        "Take 4 tablets daily for 5 days",
        "2024-11-01",
        "312617",
        "Dr. J. Patel",
        "2024-11-05"
      ),
      med("Sertraline Hydrochloride", "50 mg", "Tablet", "Take 1 tablet daily", "2025-01-20", "312941", "Dr. J. Patel")
    ]
  }
]
