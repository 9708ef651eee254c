/** Instants the tests use, in Unix seconds at 00:00:00 UTC; written once here. */
export const JAN_1_2025 = 1_735_689_600;
export const FEB_1_2025 = 1_738_368_000;
export const JAN_1_2026 = 1_767_225_600;
export const FEB_1_2026 = 1_769_904_000;
/** Without a year: 2026. */
export const SEP_1 = 1_788_220_800;
export const OCT_1 = 1_790_812_800;
export const OCT_16 = 1_792_108_800;
export const NOV_1 = 1_793_491_200;
export const NOV_16 = 1_794_787_200;
export const DEC_1 = 1_796_083_200;

/** A valid request for January 2025. */
export const JANUARY = { startTimestamp: JAN_1_2025, endTimestamp: FEB_1_2025 - 1, numUsers: 10 } as const;
