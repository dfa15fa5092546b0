import { binding, type NativeBoundArguments } from './binding.js';
import type { DeviceBuffer } from './device-buffer.js';
import { ArgumentError } from './errors.js';

/**
 * Device buffers the addon reads once and appends to the arguments of every run that names them
 * (ExecuteOptions.bound): a model version's weights. Passed one by one, each buffer costs every
 * execution its checks here and a wrapper check and unwrap in the addon, on the JS thread:
 * resnet's 32 weights, about 17 µs per execute (bench/RESULTS.md, session 15). Holds no memory of
 * its own: a buffer disposed later fails the runs that name it, as it would when passed itself.
 */
export class BoundArguments {
  readonly buffers: readonly DeviceBuffer[];
  /** The device every buffer lives on (0 when there are none). */
  readonly device: number;
  /** @internal */
  readonly native: NativeBoundArguments;

  constructor(buffers: readonly DeviceBuffer[]) {
    const device = buffers[0]?.device ?? 0;
    buffers.forEach((b, i) => {
      if (b.device !== device) throw new ArgumentError(`buffers[${i}] lives on device ${b.device}, not ${device}`);
    });
    this.buffers = [...buffers];
    this.device = device;
    this.native = binding().bindArguments(buffers.map((b) => b.native));
  }
}
