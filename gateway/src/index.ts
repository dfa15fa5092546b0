// @hloserve/gateway: the KServe reverse proxy in front of several workers (docs/gateway.md).
export { DEFAULT_GATEWAY, Gateway, type GatewayOptions } from './gateway.js';
export { serveGateway, type GatewayListen, type RunningGateway } from './serve-gateway.js';
export type { WorkerSpec } from './fleet.js';
export type { WorkerAddress } from './worker-client.js';
export { ROUTING_MODES, type RoutingMode } from './routing/router.js';
export { parseReplicas } from './placement/replicas-flag.js';
export { gatewayTlsFromFiles, type GatewayTls } from './tls.js';
export {
  MemoryPlacementState,
  type AuditEntry,
  type AuditRecord,
  type OperatorPlacement,
  type PlacementState,
} from './control/placement-state.js';
