/**
 * How many workers a node runs. `auto` finds NVIDIA GPUs (CUDA_VISIBLE_DEVICES, else nvidia-smi,
 * else /dev/nvidiaN) and gives each worker one; a number is a worker count (on CPU, for
 * development). Each GPU worker sees exactly its device, as ordinal 0.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

export interface WorkerDevice {
  /** CUDA_VISIBLE_DEVICES for the worker; null on CPU (left unset). */
  readonly cudaVisibleDevices: string | null;
}

export function detectGpus(env: Readonly<Record<string, string | undefined>> = process.env): string[] {
  const visible = env['CUDA_VISIBLE_DEVICES'];
  if (visible !== undefined)
    return visible
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '' && s !== '-1');
  const smi = spawnSync('nvidia-smi', ['--query-gpu=index', '--format=csv,noheader'], { encoding: 'utf8' });
  if (smi.status === 0)
    return smi.stdout
      .split('\n')
      .map((s) => s.trim())
      .filter(Boolean);
  try {
    return readdirSync('/dev')
      .filter((n) => /^nvidia\d+$/.test(n))
      .map((n) => n.slice('nvidia'.length))
      .sort((a, b) => Number(a) - Number(b));
  } catch {
    return [];
  }
}

/** `auto` | a positive count -> one device entry per worker. */
export function resolveWorkerDevices(
  spec: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): WorkerDevice[] {
  if (spec === 'auto') {
    const gpus = detectGpus(env);
    if (gpus.length === 0)
      throw new Error('--workers auto: no NVIDIA GPU found (CUDA_VISIBLE_DEVICES, nvidia-smi, /dev/nvidia*)');
    return gpus.map((g) => ({ cudaVisibleDevices: g }));
  }
  const n = Number(spec);
  if (!Number.isInteger(n) || n < 1 || n > 256)
    throw new Error(`--workers expects a count 1-256 or 'auto', got '${spec}'`);
  return Array.from({ length: n }, () => ({ cudaVisibleDevices: null }));
}
