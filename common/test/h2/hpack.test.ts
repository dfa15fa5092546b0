/**
 * HPACK against RFC 7541's worked examples (Appendix C: the byte strings, the header lists and
 * the dynamic table after each block are the spec's), and the encoder's output decoding back.
 */
import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { encodeHeaders, HpackDecoder, HpackError } from '../../src/h2/frame/hpack.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const pairs = (list: string[]) => {
  const out: [string, string][] = [];
  for (let i = 0; i < list.length; i += 2) out.push([list[i]!, list[i + 1]!]);
  return out;
};

interface Step {
  block: string;
  headers: [string, string][];
  table: [string, string][];
  size: number;
}

function series(tableSize: number, steps: Step[]): void {
  const d = new HpackDecoder(tableSize);
  for (const [i, s] of steps.entries()) {
    assert.deepEqual(pairs(d.decode(hex(s.block))), s.headers, `block ${i + 1}`);
    assert.deepEqual(d.table.entries, s.table, `table after block ${i + 1}`);
    assert.equal(d.table.size, s.size, `table size after block ${i + 1}`);
  }
}

const REQ1: [string, string][] = [
  [':method', 'GET'],
  [':scheme', 'http'],
  [':path', '/'],
  [':authority', 'www.example.com'],
];
const REQ2: [string, string][] = [...REQ1, ['cache-control', 'no-cache']];
const REQ3: [string, string][] = [
  [':method', 'GET'],
  [':scheme', 'https'],
  [':path', '/index.html'],
  [':authority', 'www.example.com'],
  ['custom-key', 'custom-value'],
];
const T1: [string, string][] = [[':authority', 'www.example.com']];
const T2: [string, string][] = [['cache-control', 'no-cache'], ...T1];
const T3: [string, string][] = [['custom-key', 'custom-value'], ...T2];

const RESP1: [string, string][] = [
  [':status', '302'],
  ['cache-control', 'private'],
  ['date', 'Mon, 21 Oct 2013 20:13:21 GMT'],
  ['location', 'https://www.example.com'],
];
const RESP2: [string, string][] = [[':status', '307'], ...RESP1.slice(1)];
const RESP3: [string, string][] = [
  [':status', '200'],
  ['cache-control', 'private'],
  ['date', 'Mon, 21 Oct 2013 20:13:22 GMT'],
  ['location', 'https://www.example.com'],
  ['content-encoding', 'gzip'],
  ['set-cookie', 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1'],
];
const RT1: [string, string][] = [...RESP1].reverse();
const RT2: [string, string][] = [[':status', '307'], ...RT1.slice(0, 3)];
const RT3: [string, string][] = [
  ['set-cookie', 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1'],
  ['content-encoding', 'gzip'],
  ['date', 'Mon, 21 Oct 2013 20:13:22 GMT'],
];

suite('HPACK (RFC 7541 Appendix C)', () => {
  test('C.3: requests without Huffman coding, the dynamic table growing', () =>
    series(4096, [
      { block: '8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d', headers: REQ1, table: T1, size: 57 },
      { block: '8286 84be 5808 6e6f 2d63 6163 6865', headers: REQ2, table: T2, size: 110 },
      {
        block: '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65',
        headers: REQ3,
        table: T3,
        size: 164,
      },
    ]));

  test('C.4: the same requests with Huffman coding', () =>
    series(4096, [
      { block: '8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff', headers: REQ1, table: T1, size: 57 },
      { block: '8286 84be 5886 a8eb 1064 9cbf', headers: REQ2, table: T2, size: 110 },
      {
        block: '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf',
        headers: REQ3,
        table: T3,
        size: 164,
      },
    ]));

  test('C.5: responses in a 256-byte table, with evictions', () =>
    series(256, [
      {
        block: `4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
                2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
                6c65 2e63 6f6d`,
        headers: RESP1,
        table: RT1,
        size: 222,
      },
      { block: '4803 3330 37c1 c0bf', headers: RESP2, table: RT2, size: 222 },
      {
        block: `88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
                54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
                5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
                3d31`,
        headers: RESP3,
        table: RT3,
        size: 215,
      },
    ]));

  test('C.6: the same responses with Huffman coding', () =>
    series(256, [
      {
        block: `4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3`,
        headers: RESP1,
        table: RT1,
        size: 222,
      },
      { block: '4883 640e ffc1 c0bf', headers: RESP2, table: RT2, size: 222 },
      {
        block: `88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
                77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
                9587 3160 65c0 03ed 4ee5 b106 3d50 07`,
        headers: RESP3,
        table: RT3,
        size: 215,
      },
    ]));

  test('C.2.1-C.2.4: one field of each representation; never-indexed stays out of the table', () => {
    const d = new HpackDecoder();
    assert.deepEqual(d.decode(hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572')), [
      'custom-key',
      'custom-header',
    ]);
    assert.equal(d.table.size, 55);
    const e = new HpackDecoder();
    assert.deepEqual(e.decode(hex('040c 2f73 616d 706c 652f 7061 7468')), [':path', '/sample/path']);
    assert.deepEqual(e.decode(hex('1008 7061 7373 776f 7264 0673 6563 7265 74')), ['password', 'secret']);
    assert.deepEqual(e.decode(hex('82')), [':method', 'GET']);
    assert.equal(e.table.size, 0);
  });

  test('broken blocks are refused: unknown index, truncated literal, bad Huffman padding, oversized table update', () => {
    assert.throws(() => new HpackDecoder().decode(hex('be')), HpackError); // index 62, empty dynamic table
    assert.throws(() => new HpackDecoder().decode(hex('400a 6375 7374')), HpackError);
    assert.throws(() => new HpackDecoder().decode(hex('0481 00')), HpackError); // a 0 bit in the padding
    assert.throws(() => new HpackDecoder().decode(hex('3fe1 3f')), HpackError); // size update 8192 > 4096
    assert.throws(() => new HpackDecoder().decode(hex('82 20')), HpackError); // size update after a field
  });

  test('the encoder indexes static matches, writes the rest as literals, and decodes back', () => {
    const list = [
      ':status',
      '200',
      'content-type',
      'application/grpc',
      'grpc-status',
      '0',
      'grpc-message',
      'caf%C3%A9 %25',
      'x-long',
      'v'.repeat(300),
    ];
    const block = encodeHeaders(list);
    assert.equal(block[0], 0x88); // :status 200 is static entry 8
    assert.deepEqual(new HpackDecoder().decode(block), list);
    const withUpdate = encodeHeaders([':path', '/x'], true);
    assert.equal(withUpdate[0], 0x20);
    assert.deepEqual(new HpackDecoder().decode(withUpdate), [':path', '/x']);
  });
});
