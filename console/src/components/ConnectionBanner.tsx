import { useEffect, useState } from 'react';
import { currentWorker } from '../api/worker-choice.js';
import { usePageVisible, useStreamStatus, useWatermark } from '../app/live.js';
import { allows, useSession } from '../app/session.js';

/** Live, reconnecting (attempt n, next in s), resynced, and read-only for a viewer token. */
export function ConnectionBanner() {
  const status = useStreamStatus();
  const watermark = useWatermark();
  const session = useSession();
  const [now, setNow] = useState(Date.now());
  const visible = usePageVisible();
  const retryAt = status.state === 'reconnecting' ? status.nextRetryAtMs : null;
  useEffect(() => {
    // The countdown shows whole seconds: one render when the shown second changes, not a fixed
    // 2 Hz tick, and none in a hidden tab (20 open tabs would each render through every engine
    // restart while the engine starts on the same cores); shown again, it reads the clock at once.
    if (retryAt === null || !visible) return;
    let t: ReturnType<typeof setTimeout> | undefined;
    const tick = () => {
      const at = Date.now();
      setNow(at);
      const left = retryAt - at;
      if (left > 0) t = setTimeout(tick, (left % 1000 || 1000) + 5);
    };
    tick();
    return () => clearTimeout(t);
  }, [retryAt, visible]);
  // Behind a gateway, whose feed this is (the URL's choice; Layout renders on every navigation).
  const worker = currentWorker();
  const readOnly = session.data && !allows(session.data.scope, 'operator');
  let text: string;
  switch (status.state) {
    case 'live':
      text = 'Live';
      break;
    case 'resynced':
      text = 'Resynced: the engine sent fresh state after a gap or a change of worker';
      break;
    case 'reconnecting': {
      const inS = status.nextRetryAtMs ? Math.max(0, Math.ceil((status.nextRetryAtMs - now) / 1000)) : 0;
      text = status.nextRetryAtMs ? `Reconnecting (attempt ${status.attempt}, next in ${inS} s)` : 'Reconnecting…';
      break;
    }
    case 'connecting':
      text = 'Connecting…';
      break;
    case 'denied':
      text = `The engine refused the live feed: ${status.error ?? 'token or origin not accepted'}`;
      break;
    default:
      text = 'Idle';
  }
  return (
    <div
      className={`banner ${status.state}`}
      role="status"
      aria-live="polite"
      data-testid="connection-banner"
      data-state={status.state}
      data-seq={watermark}
    >
      <span className="dot" aria-hidden="true" />
      {/* The seq is a tooltip, not text: a number drawn at the top of every screen would join each
          update's repaint to the numbers lower down, one damaged area spanning both. */}
      <span title={`highest stream sequence seen: ${watermark}`}>{text}</span>
      {worker !== null && (
        <span className="pill" data-testid="feed-worker">
          worker {worker}
        </span>
      )}
      {readOnly && (
        <span className="pill" data-testid="read-only">
          Read-only (viewer token)
        </span>
      )}
    </div>
  );
}
