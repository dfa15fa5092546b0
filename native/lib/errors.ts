/** A failure reported by the PJRT plugin, with its status code (absl codes: 3 INVALID_ARGUMENT, ...). */
export class PjrtError extends Error {
  readonly code: number;
  readonly codeName: string;
  constructor(message: string, code: number, codeName: string) {
    super(message);
    this.name = 'PjrtError';
    this.code = code;
    this.codeName = codeName;
  }
}

/** Use of a runtime object (client, executable, buffer) after dispose(). */
export class DisposedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DisposedError';
  }
}

/** A registered shared-memory object changed under us: truncated below its window, or unlinked. */
export class SharedMemoryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SharedMemoryError';
  }
}

/** The plugin could not be found or loaded; the message says what to run. */
export class PluginLoadError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PluginLoadError';
  }
}

/** An argument refused before it reached PJRT (it would have been a crash or a silent misread). */
export class ArgumentError extends TypeError {
  constructor(message: string) {
    super(message);
    this.name = 'ArgumentError';
  }
}

export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const e = new Error('the operation was aborted');
  e.name = 'AbortError';
  return e;
}
