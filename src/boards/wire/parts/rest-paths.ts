/**
 * The paths of the REST operation and its live stream under BASE_PATH: the REST skin serves the first, the SSE skin
 * the second, the overlay page points its browser at the second, and CORS preflights are answered for both.
 */
export const OPERATION_PATH = "/top-affiliate-wagers-by-period";
export const STREAM_PATH = `${OPERATION_PATH}/stream`;
