/**
 * What an HTTP/1 listener answers for a request Node's parser refused before any handler saw it (a
 * malformed request line, bytes after a request that were not framed as its body, a header block
 * past the limit, a request that did not arrive in time): the catalogue's status and
 * `{error, code}`, then the connection is closed. Node's own answer is a bare 400 with no body.
 * The worker's KServe HTTP port and the gateway's answer alike through this.
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { invalidArgument, ServeError, toHttpStatus } from './errors.js';

export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex, requestTimeoutMs: number): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const e =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new ServeError('HLO_ERR_MESSAGE_TOO_LARGE', 'request headers exceed the server limit')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new ServeError('HLO_ERR_DEADLINE_EXCEEDED', `the request did not arrive within ${requestTimeoutMs} ms`)
        : invalidArgument(`malformed HTTP request (${err.code ?? 'parse error'})`);
  const { status, body } = toHttpStatus(e);
  const text = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  );
}
