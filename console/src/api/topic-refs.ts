import type { TopicHandler } from './stream.js';

/** What a topic's subscribers share: its handlers, a count of holders, and a pending release. */
export interface TopicRefs {
  refs: number;
  readonly handlers: Set<TopicHandler>;
  unsubscribeTimer: ReturnType<typeof setTimeout> | null;
}

/**
 * Drops one holder of `topic`. The last one lets it go only after `delayMs`, so a screen that
 * re-subscribes on the next render (a route change) keeps the subscription instead of churning it;
 * `onLast` runs once the topic is removed from `topics`.
 */
export function releaseTopic<T extends TopicRefs>(
  topics: Map<string, T>,
  topic: string,
  handler: TopicHandler,
  delayMs: number,
  onLast: () => void,
): void {
  const t = topics.get(topic);
  if (!t) return;
  t.handlers.delete(handler);
  t.refs--;
  if (t.refs > 0) return;
  t.unsubscribeTimer = setTimeout(() => {
    t.unsubscribeTimer = null;
    if (t.refs > 0) return;
    topics.delete(topic);
    onLast();
  }, delayMs);
}
