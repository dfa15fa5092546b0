/** ControlService (proto/hloserve/control.proto) on the worker's gRPC port, over the control facade. */
import { invalidArgument } from '@hloserve/common/errors';
import type { GrpcServices, ServiceDefinition, ServiceImplementation } from '@hloserve/common/h2/grpc-services';
import {
  ControlServiceService,
  type ModelStatus,
  Residency as WireResidency,
  ResidencyMode as WireResidencyMode,
} from '@hloserve/proto/control';
import type { Residency } from '../config/types.js';
import type { ControlService, ModelControlView } from './control-service.js';

const TO_WIRE: Record<Residency, WireResidency> = {
  unpinned: WireResidency.RESIDENCY_UNPINNED,
  system: WireResidency.RESIDENCY_SYSTEM,
  device: WireResidency.RESIDENCY_DEVICE,
};

function fromWire(r: WireResidency): Residency {
  switch (r) {
    case WireResidency.RESIDENCY_UNPINNED:
      return 'unpinned';
    case WireResidency.RESIDENCY_SYSTEM:
      return 'system';
    case WireResidency.RESIDENCY_DEVICE:
      return 'device';
    default:
      throw invalidArgument('target residency must be UNPINNED, SYSTEM or DEVICE');
  }
}

function modelStatus(m: ModelControlView): ModelStatus {
  const s = m.scheduling;
  return {
    name: m.name,
    residency: TO_WIRE[m.policy.residency],
    deviceResident: m.weights?.deviceResident ?? false,
    hostResident: m.weights?.hostResident ?? false,
    weightBytes: m.weightBytes,
    weight: m.policy.weight,
    queueDepth: s?.queueDepth ?? 0,
    totalComputeSeconds: s?.computeSecondsTotal ?? 0,
    requestsServed: s?.requestsServed ?? 0,
    dispatchCount: s?.dispatchCount ?? 0,
    rowsServed: s?.rowsServed ?? 0,
    maxBatchSize: m.maxBatchSize,
    batchInputName: m.batchInput?.name ?? '',
    batchAxis: m.batchInput === null ? 0 : m.batchInput.axis + 1,
  };
}

function implementation(control: ControlService): ServiceImplementation {
  return {
    modelControlStatus: () => {
      const s = control.status();
      return {
        residencyMode:
          s.residencyMode === 'externally_managed'
            ? WireResidencyMode.RESIDENCY_MODE_EXTERNALLY_MANAGED
            : WireResidencyMode.RESIDENCY_MODE_SELF_MANAGED,
        discipline: s.discipline,
        models: s.models.map(modelStatus),
        weightCacheMaxBytes: Number.isFinite(s.weightCacheMaxBytes) ? s.weightCacheMaxBytes : 0,
        weightCacheResidentBytes: s.weightCacheResidentBytes,
        weightCachePinnedBytes: s.weightCachePinnedBytes,
      };
    },
    setModelResidency: async (req: { name: string; target: WireResidency }) => {
      const target = fromWire(req.target);
      return { residency: TO_WIRE[await control.setResidency(req.name, target)] };
    },
    setModelPolicy: async (req: { name: string; weight?: number | undefined }) => {
      const p = await control.setPolicy(req.name, req.weight === undefined ? {} : { weight: req.weight });
      return { name: req.name, weight: p.weight };
    },
    compactMemory: async (req: { reloadModels: string[] }) => {
      const r = await control.compactMemory(req.reloadModels);
      return { reloadedModels: [...r.reloadedModels], residentBytesAfter: r.residentBytesAfter };
    },
  };
}

/**
 * Registers ControlService with the port's services. Its requests are decoded like the inference
 * service's: bytes that are not the method's message answer INVALID_ARGUMENT.
 */
export function addControlService(services: GrpcServices, control: ControlService): void {
  services.addService(ControlServiceService as unknown as ServiceDefinition, implementation(control));
}
