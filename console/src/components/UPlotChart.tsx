import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** The shortest time between two redraws of a live chart (docs/console.md, "How the data stays live"). */
export const CHART_REDRAW_MS = 5000;
/** How early a due redraw is made, so that it lands on a render of new data (they come each second). */
const CHART_EARLY_MS = 500;

export interface SparklineProps {
  readonly label: string;
  /** x: epoch seconds; each series one array of the same length. */
  readonly x: readonly number[];
  readonly series: readonly {
    readonly name: string;
    readonly values: readonly (number | null)[];
    readonly color: string;
  }[];
  readonly height?: number;
  /** The x window in seconds, ending at the newest point. */
  readonly windowS?: number;
}

/** A streaming time-series chart (uPlot): created once, fed new data with setData. */
export default function UPlotChart({ label, x, series, height = 140, windowS = 300 }: SparklineProps) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const lastDraw = useRef(-Infinity);
  const names = series.map((s) => s.name).join('|');
  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height,
      legend: { show: true, live: false },
      cursor: { show: true, drag: { x: false, y: false } },
      // Always the last five minutes: a fresh page with one tick would otherwise span years.
      scales: {
        x: { time: true, range: (_u, _min, max) => [(max || Date.now() / 1000) - windowS, max || Date.now() / 1000] },
      },
      axes: [
        { stroke: 'currentColor', grid: { stroke: 'rgba(127,127,127,0.15)' } },
        { stroke: 'currentColor', grid: { stroke: 'rgba(127,127,127,0.15)' }, size: 44 },
      ],
      series: [{}, ...series.map((s) => ({ label: s.name, stroke: s.color, width: 1.5, spanGaps: true }))],
    };
    const p = new uPlot(opts, [[...x], ...series.map((s) => [...s.values])] as uPlot.AlignedData, el);
    plot.current = p;
    lastDraw.current = -Infinity; // a new plot takes its next data at once
    const ro = new ResizeObserver(() => p.setSize({ width: Math.max(200, el.clientWidth), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      p.destroy();
      plot.current = null;
    };
    // Recreated only when the set of series changes; data flows through setData below.
  }, [names, height, windowS]);
  // New points are drawn at most every CHART_REDRAW_MS (the latest data then): a redraw repaints
  // the whole canvas with its axes and labels, the costliest part of a live page's second. A redraw
  // is made in the render that brought new data, so it shares that render's frame: one due within
  // CHART_EARLY_MS is made now, and the timer draws only when no new data comes by then.
  const latest = useRef({ x, series });
  latest.current = { x, series };
  const pending = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => {
    const draw = () => {
      if (pending.current !== null) clearTimeout(pending.current);
      pending.current = null;
      const d = latest.current;
      // An empty draw (the page before its history arrives) does not start the wait: the first
      // points are drawn as soon as they come, not up to CHART_REDRAW_MS later.
      lastDraw.current = d.x.length > 0 ? performance.now() : -Infinity;
      plot.current?.setData([[...d.x], ...d.series.map((s) => [...s.values])] as uPlot.AlignedData);
    };
    const wait = lastDraw.current + CHART_REDRAW_MS - performance.now();
    if (wait <= CHART_EARLY_MS) draw();
    else pending.current ??= setTimeout(draw, wait + CHART_EARLY_MS);
  }, [x, series]);
  useEffect(
    () => () => {
      if (pending.current !== null) clearTimeout(pending.current);
    },
    [],
  );
  return <div ref={host} role="img" aria-label={label} className="spark" />;
}
