// Draws the console's PNG icons (the same bars as static/icons/icon.svg) without an image library.
// Run: node console/scripts/make-icons.mjs  (writes console/static/icons/icon-*.png)
import { writeFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}
const hex = (h) => [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16), 255];

/** Shapes in the SVG's 64-unit space: [x, y, w, h, radius, colour]. */
const shapes = [
  [10, 40, 10, 14, 2, '#7fb3e6'],
  [24, 30, 10, 24, 2, '#a8cdf0'],
  [38, 20, 10, 34, 2, '#e6f0fa'],
  [52, 12, 4, 42, 1, '#f2b84b'],
];

function inRounded(px, py, x, y, w, h, r) {
  if (px < x || py < y || px > x + w || py > y + h) return false;
  const cx = Math.min(Math.max(px, x + r), x + w - r);
  const cy = Math.min(Math.max(py, y + r), y + h - r);
  return (px - cx) ** 2 + (py - cy) ** 2 <= r * r;
}

function draw(size, maskable) {
  const rows = [];
  // A maskable icon keeps its content inside the central 80% safe zone and fills the square.
  const scale = maskable ? 0.72 : 1;
  const off = (64 - 64 * scale) / 2;
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 4);
    for (let x = 0; x < size; x++) {
      const u = ((x + 0.5) / size) * 64;
      const v = ((y + 0.5) / size) * 64;
      let c = [0, 0, 0, 0];
      if (maskable || inRounded(u, v, 0, 0, 64, 64, 12)) c = hex('#1f3a5f');
      const su = (u - off) / scale;
      const sv = (v - off) / scale;
      for (const [sx, sy, w, h, r, col] of shapes) if (inRounded(su, sv, sx, sy, w, h, r)) c = hex(col);
      row.set(c, 1 + x * 4);
    }
    rows.push(row);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([
    sig,
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const dir = new URL('../static/icons/', import.meta.url);
writeFileSync(new URL('icon-192.png', dir), draw(192, false));
writeFileSync(new URL('icon-512.png', dir), draw(512, false));
writeFileSync(new URL('icon-maskable-512.png', dir), draw(512, true));
