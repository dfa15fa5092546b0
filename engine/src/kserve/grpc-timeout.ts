// A static import (not a require at run time) so that the bundled CLI patches the grpc-js it
// bundled, not a second copy from node_modules.
import * as serverInterceptors from '@grpc/grpc-js/build/src/server-interceptors.js';
import { MAX_TIMER_MS } from '@hloserve/common/timers';

/**
 * grpc-js reads grpc-timeout as `(value * unit) | 0`: a client deadline of 2^31 ms (24.8 days) or
 * more wraps to a negative delay, and the call is answered DEADLINE_EXCEEDED before its handler
 * runs. grpc-js exposes no hook before that parse, so the parse itself is wrapped, once, here: a
 * timeout beyond what a timer holds means no practical deadline (the call keeps grpc-js's default
 * of Infinity), one within it goes to grpc-js unchanged.
 */
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };
const TIMEOUT = /^\s*(\d{1,8})\s*([HMSmun])\s*$/;

interface TimeoutParser {
  handleTimeoutHeader(this: TimeoutParser, header: unknown): void;
}

let installed = false;

export function installGrpcTimeoutClamp(): void {
  if (installed) return;
  installed = true;
  const mod = serverInterceptors as unknown as { BaseServerInterceptingCall?: { prototype: TimeoutParser } };
  const proto = mod.BaseServerInterceptingCall?.prototype;
  if (!proto || typeof proto.handleTimeoutHeader !== 'function') return; // a grpc-js without the bug's shape
  const original = proto.handleTimeoutHeader;
  proto.handleTimeoutHeader = function (this: TimeoutParser, header: unknown) {
    const m = TIMEOUT.exec(String(header));
    if (m && Number(m[1]) * UNIT_MS[m[2]!]! > MAX_TIMER_MS) return;
    original.call(this, header);
  };
}
