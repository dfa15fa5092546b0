import { lazy, Suspense } from 'react';
import type { SparklineProps } from './UPlotChart.js';

// uPlot loads after the first paint: the numbers and the memory bar come first.
const UPlotChart = lazy(() => import('./UPlotChart.js'));

/** A streaming time-series chart (uPlot), loaded on first use. */
export function Sparkline(props: SparklineProps) {
  return (
    <Suspense fallback={<div style={{ height: (props.height ?? 140) + 30 }} aria-label={props.label} role="img" />}>
      <UPlotChart {...props} />
    </Suspense>
  );
}
