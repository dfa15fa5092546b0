export { Supervisor, type SupervisorOptions } from './supervisor.js';
export { resolveWorkerDevices, detectGpus, type WorkerDevice } from './devices.js';
export { restartDelayMs } from './backoff.js';
export { tagLine } from './log-mux.js';
export { gatewayTlsFor, settingsBehindGateway, TLS_AT_GATEWAY_ENV } from './gateway-tls.js';
