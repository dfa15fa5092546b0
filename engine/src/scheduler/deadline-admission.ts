/**
 * Whether a queued request is still worth running. A deadline is an absolute clock time (ms);
 * null means none. `marginMs` is how long the dispatch is expected to take: zero drops only
 * requests already late, the cost estimate (EDF) also sheds work that would finish late anyway,
 * so the device is not spent on answers nobody will receive.
 */
export function cannotMeetDeadline(deadline: number | null, nowMs: number, marginMs: number): boolean {
  return deadline !== null && nowMs + marginMs >= deadline;
}
