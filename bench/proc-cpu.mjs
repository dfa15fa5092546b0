// CPU time of process trees, from /proc: what the console benches charge to the engine, the
// browser and the load generator.
import { readdirSync, readFileSync } from 'node:fs';

const USER_HZ = 100; // the clock ticks /proc/<pid>/stat counts in, on Linux

/** CPU seconds (user + system) in a /proc stat file's text. */
const statCpu = (f) => (Number(f[11]) + Number(f[12])) / USER_HZ;
/** The fields of a /proc stat file after its command name (which may hold spaces). */
const statFields = (text) => text.slice(text.lastIndexOf(')') + 2).split(' ');

/**
 * CPU seconds (user + system) of a process (/proc/PID/stat) and of its main thread
 * (/proc/PID/task/PID/stat: the JS thread of a Node process); NaN off Linux or once it is gone.
 */
export function processCpuSeconds(pid) {
  const read = (path) => {
    try {
      return statCpu(statFields(readFileSync(path, 'utf8')));
    } catch {
      return NaN;
    }
  };
  return { mainCpuS: read(`/proc/${pid}/task/${pid}/stat`), procCpuS: read(`/proc/${pid}/stat`) };
}

/** Every process's CPU seconds (user + system) and parent, read once. */
export function procTable() {
  const parent = new Map();
  const cpu = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const f = statFields(readFileSync(`/proc/${d}/stat`, 'utf8'));
      parent.set(Number(d), Number(f[1]));
      cpu.set(Number(d), statCpu(f));
    } catch {
      // exited while we looked
    }
  }
  return { parent, cpu };
}

/** CPU seconds of `rootPid` and its descendants in `table`, less the subtrees of `skip`. */
export function treeCpu(table, rootPid, skip = []) {
  if (!rootPid) return 0;
  let s = 0;
  for (const [pid, c] of table.cpu) {
    for (let p = pid; p > 1; p = table.parent.get(p) ?? 0) {
      if (skip.includes(p)) break;
      if (p === rootPid) {
        s += c;
        break;
      }
    }
  }
  return s;
}

/** CPU seconds of a process and its descendants now, less the subtrees of `skip`. */
export const cpuSeconds = (rootPid, skip = []) => treeCpu(procTable(), rootPid, skip);

/**
 * Time a process's threads have run, in ms, from /proc/PID/task/TID/schedstat (nanoseconds; the
 * user + system ticks of /proc/PID/stat are 10 ms, 5 µs a request over 2000 requests).
 */
export function schedstatMs(pid) {
  let ns = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      /* a thread that ended */
    }
  }
  return ns / 1e6;
}

/** The pids of `root` and its descendants in `table` (procTable's). */
export const treePids = (table, root) =>
  root
    ? [...table.cpu.keys()].filter((pid) => {
        for (let p = pid; p > 1; p = table.parent.get(p) ?? 0) if (p === root) return true;
        return false;
      })
    : [];

/**
 * Per thread of `pids`: run and run-queue wait (ns, schedstat) and voluntary / involuntary context
 * switches (status). A voluntary switch is a thread going to sleep, so each is one wake-up later.
 */
export function threads(pids) {
  const out = new Map();
  for (const pid of pids) {
    let tids;
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
        const st = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
        const num = (k) => Number(new RegExp(`${k}:\\s*(\\d+)`).exec(st)?.[1] ?? 0);
        out.set(`${pid}/${tid}`, {
          main: String(pid) === tid,
          run,
          wait,
          vol: num('voluntary_ctxt_switches'),
          invol: num('nonvoluntary_ctxt_switches'),
        });
      } catch {
        /* a thread that ended */
      }
    }
  }
  return out;
}
