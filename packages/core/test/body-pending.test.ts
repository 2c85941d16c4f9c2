import { describe, expect, it } from 'vitest';
import { bodyPending, type PendingRequest } from '../src/http.js';

// Whether a deny sent now leaves request bytes unread: what decides, in both
// adapters, that the answer closes the connection (HTTP/1.1) or lingers on
// the stream (HTTP/2).

const h1 = (headers: PendingRequest['headers'], complete = false): PendingRequest => ({
  complete,
  httpVersionMajor: 1,
  headers,
});
const h2 = (endAfterHeaders: boolean, complete = false): PendingRequest => ({
  complete,
  httpVersionMajor: 2,
  headers: {},
  stream: { endAfterHeaders },
});

describe('bodyPending', () => {
  it.each([
    ['HTTP/1.1 without a length or a transfer encoding (a GET)', h1({}), false],
    ['HTTP/1.1 with content-length 0', h1({ 'content-length': '0' }), false],
    ['HTTP/1.1 with content-length 000', h1({ 'content-length': '000' }), false],
    ['HTTP/1.1 with content-length 010', h1({ 'content-length': '010' }), true],
    // Node refuses an empty length; were one to come, it is no "no body".
    ['HTTP/1.1 with an empty length: pending, to be safe', h1({ 'content-length': '' }), true],
    // Node refuses a list (400) and trims spaces: one that came anyway is no zero.
    ['HTTP/1.1 with a list of zeros: pending, to be safe', h1({ 'content-length': '0, 0' }), true],
    ['HTTP/1.1 with spaces around 0: pending, to be safe', h1({ 'content-length': ' 0 ' }), true],
    [
      'HTTP/1.1 with a length that is no one string: pending, to be safe',
      h1({ 'content-length': ['0'] }),
      true,
    ],
    ['HTTP/1.1 with a length', h1({ 'content-length': '12' }), true],
    ['HTTP/1.1 chunked', h1({ 'transfer-encoding': 'chunked' }), true],
    ['HTTP/1.1 with a length, read whole', h1({ 'content-length': '12' }, true), false],
    ['HTTP/2 whose HEADERS frame ends the stream', h2(true), false],
    ['HTTP/2 with a body to follow, no length needed', h2(false), true],
    ['HTTP/2 with a body, read whole', h2(false, true), false],
    ['HTTP/2 with no stream to ask', { ...h2(false), stream: undefined }, false],
  ])('%s', (_name, req, pending) => {
    expect(bodyPending(req)).toBe(pending);
  });
});
