/**
 * One race's events reach an endpoint in order (docs/webhooks.md): a delivery of a race event is claimed only
 * while it is the oldest delivery still pending (due, waiting for a retry, or in flight) of its race to its
 * endpoint. So `race.ended` waits for `race.started` to be delivered or to fail for good, on every instance;
 * other races' events, and other endpoints', are not held back.
 */
import type { PoolConnection, RowDataPacket } from "mysql2/promise";

/**
 * Of the candidate deliveries (due and unleased, in claim order), those not waiting behind an older pending
 * delivery of the same race to the same endpoint; non-race events pass as they are.
 */
export async function inRaceOrder(
  connection: PoolConnection,
  candidates: readonly { readonly id: string; readonly endpointId: string }[],
): Promise<{ id: string; endpointId: string }[]> {
  if (candidates.length === 0) return [];
  const [races] = await connection.query<RowDataPacket[]>(
    // race_id: the race a `race.*` event's body is about (`data.id`), a virtual column indexed (migration 16).
    `SELECT d.id, e.race_id AS race FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
      WHERE d.id IN (?) AND e.race_id IS NOT NULL`,
    [candidates.map((c) => c.id)],
  );
  if (races.length === 0) return [...candidates];
  const raceOf = new Map(races.map((row) => [String(row.id), String(row.race)]));
  const endpoints = [...new Set(candidates.filter((c) => raceOf.has(c.id)).map((c) => c.endpointId))];
  const raceIds = [...new Set(raceOf.values())];
  // Only the candidates' races' events, by the race index, and their deliveries by the event index.
  const [oldest] = await connection.query<RowDataPacket[]>(
    `SELECT d.endpoint_id, e.race_id AS race, MIN(d.id) AS first_id
       FROM webhook_events e JOIN webhook_deliveries d ON d.event_id = e.id
      WHERE e.race_id IN (?) AND d.state = 'pending' AND d.endpoint_id IN (?)
      GROUP BY d.endpoint_id, e.race_id`,
    [raceIds, endpoints],
  );
  const first = new Map(oldest.map((row) => [`${String(row.endpoint_id)} ${String(row.race)}`, String(row.first_id)]));
  return candidates.filter((c) => {
    const race = raceOf.get(c.id);
    return race === undefined || first.get(`${c.endpointId} ${race}`) === c.id;
  });
}
