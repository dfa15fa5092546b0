export {
  Runtime,
  type RuntimeOptions,
  type CompileOptions,
  type CompileIdentity,
  type CudaOptions,
  type DeviceInfo,
  type MemoryStats,
  type PluginInfo,
} from './runtime.js';
export { Executable, type ExecuteArg, type ExecuteOptions } from './executable.js';
export { DeviceBuffer } from './device-buffer.js';
export { mayWaitOnClientPool } from './pool-waits.js';
export { BoundArguments } from './bound-arguments.js';
export { DeviceArena, type ArenaStats } from './device-arena.js';
export { type HostArray, hostArray, checkHostArray, byteLengthOf, asFloat32 } from './host-array.js';
export { type DType, DTYPES, DTYPE_BYTES, PJRT_TYPE, isDType, dtypeFromPjrt } from './dtype.js';
export { PjrtError, DisposedError, PluginLoadError, ArgumentError, SharedMemoryError } from './errors.js';
export { mapSharedMemory, readSharedMemory, sharedMemoryFaulted, writeSharedMemory } from './shm-io.js';
export {
  parseMainSignature,
  parseTensorType,
  isMlirBytecode,
  programSignature,
  type ProgramSignature,
  type TensorType,
} from './mlir-signature.js';
export { resolvePlugin, cpuPluginPath, cacheDir, pluginDir, pinnedPluginDir } from './plugin.js';
