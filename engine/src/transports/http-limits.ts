/** Defaults of the HTTP limits a client can meet (docs/errors.md lists them), for every HTTP listener. */
export const HTTP_LIMIT_DEFAULTS = {
  /** JSON is 5-10x larger than the same tensor in binary and costs CPU to decode: a limit of its own. */
  maxJsonBytes: 64 * 2 ** 20,
  /** The whole request (headers and body) must arrive within this; a stalled upload is cut. */
  requestTimeoutMs: 300_000,
  headersTimeoutMs: 60_000,
  /**
   * Longest path segment (a model, region, token or upload name); longer answers 400
   * HLO_ERR_INVALID_ARGUMENT. The same on the KServe and the control API's ports, so a model either
   * port can name, the other can too.
   */
  maxParamLength: 1024,
} as const;
