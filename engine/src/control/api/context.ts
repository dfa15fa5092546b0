import type { Logger } from '../../log.js';
import type { Store } from '../../state/store.js';
import type { AuditedMutations } from '../audit/audited-mutation.js';
import type { TokenService } from '../auth/token-service.js';
import type { EventLog } from '../events/event-log.js';
import type { MetricHistory } from '../events/metric-history.js';
import type { FeedHub } from '../feed/feed-hub.js';
import type { DesiredState } from '../reconcile/desired-state.js';
import type { UploadConfig, UploadService } from '../uploads/upload-service.js';
import type { ModelPort } from './model-port.js';
import type { TlsMaterial } from '../../tls/tls-material.js';

export interface ControlOptions {
  /** Where the one-time setup token is written (0600). */
  readonly setupTokenFile: string;
  /** Origins allowed to open the live feed besides the console's own (scheme://host:port). */
  readonly allowedOrigins: readonly string[];
  readonly feed: { readonly sampleMs: number; readonly heartbeatMs: number; readonly highWaterBytes: number };
  /** TLS for the console's port (REST and the live feed); absent: plaintext. */
  readonly tls?: TlsMaterial | null;
  /** Absent: the upload routes answer 501. */
  readonly uploads?: UploadConfig;
}

/** What the route plugins share; each fact has its one owner in here. */
export interface ControlContext {
  readonly port: ModelPort;
  readonly store: Store;
  readonly tokens: TokenService;
  readonly mutations: AuditedMutations;
  readonly hub: FeedHub;
  readonly events: EventLog;
  readonly history: MetricHistory;
  readonly desired: DesiredState;
  readonly uploads: UploadService | null;
  readonly options: ControlOptions;
  readonly log: Logger;
}
