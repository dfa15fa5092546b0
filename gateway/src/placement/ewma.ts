/**
 * An exponentially weighted mean whose decay is measured in work done, not wall time: `dt` is
 * how much fleet compute (device-seconds) passed since the last sample, `halflife` the amount of
 * compute after which an old estimate counts half. An idle fleet therefore never forgets.
 */
export function ewma(old: number, sample: number, dt: number, halflife: number): number {
  if (!(dt > 0)) return old;
  const alpha = halflife > 0 ? 1 - 2 ** (-dt / halflife) : 1;
  return (1 - alpha) * old + alpha * sample;
}
