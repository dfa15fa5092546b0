// Hooks of the `classify-image` example: clients send encoded images (BYTES, PNG or JPEG) and
// receive the top-3 labels with their probabilities. preprocess decodes each image into the
// executable's f32 [n,32,32,3] input (values in [0,1]); postprocess turns logits into labels.
import { TextEncoder } from 'node:util';
import { inflateSync } from 'node:zlib';

const LABELS = ['airplane', 'automobile', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse', 'ship', 'truck'];
const SIZE = 32;
const TOP = 3;
const PNG_SIGNATURE = [137, 80, 78, 71, 13, 10, 26, 10];

// An error with code INVALID_ARGUMENT blames the request (HTTP 400), not the bundle.
const badImage = (i, why) => Object.assign(new Error(`image ${i}: ${why}`), { code: 'INVALID_ARGUMENT' });

function paeth(a, b, c) {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** 8-bit, non-interlaced PNG (grey, grey+alpha, RGB, RGBA) to {width, height, channels, pixels}. */
function decodePng(buf, i) {
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat = [];
  for (let o = 8; o + 8 <= buf.length;) {
    const len = dv.getUint32(o);
    const type = String.fromCharCode(...buf.subarray(o + 4, o + 8));
    if (o + 12 + len > buf.length) throw badImage(i, 'truncated PNG chunk');
    const body = buf.subarray(o + 8, o + 8 + len);
    if (type === 'IHDR') {
      width = dv.getUint32(o + 8);
      height = dv.getUint32(o + 12);
      const depth = body[8];
      const colour = body[9];
      channels = { 0: 1, 2: 3, 4: 2, 6: 4 }[colour] ?? 0;
      if (depth !== 8 || channels === 0 || body[12] !== 0)
        throw badImage(i, `PNG colour type ${colour}, depth ${depth}, interlace ${body[12]} not supported`);
    } else if (type === 'IDAT') idat.push(body);
    else if (type === 'IEND') break;
    o += 12 + len;
  }
  if (width !== SIZE || height !== SIZE) throw badImage(i, `${width}x${height}, expected ${SIZE}x${SIZE}`);
  let raw;
  try {
    raw = inflateSync(Buffer.concat(idat));
  } catch {
    throw badImage(i, 'corrupt PNG data');
  }
  const stride = width * channels;
  if (raw.length < height * (stride + 1)) throw badImage(i, 'PNG data too short');
  const out = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? out[y * stride + x - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? out[(y - 1) * stride + x - channels] : 0;
      const pred = [0, a, b, (a + b) >> 1, paeth(a, b, c)][filter];
      if (pred === undefined) throw badImage(i, `PNG filter ${filter} unknown`);
      out[y * stride + x] = (src[x] + pred) & 0xff;
    }
  }
  return { width, height, channels, pixels: out };
}

async function decodeJpeg(buf, i) {
  // jpeg-js is a pure-JS decoder the server installs; a hook may import packages like any module.
  const { default: jpeg } = await import('jpeg-js');
  let img;
  try {
    img = jpeg.decode(buf, { useTArray: true, formatAsRGBA: true, maxMemoryUsageInMB: 64 });
  } catch (e) {
    throw badImage(i, `corrupt JPEG (${e.message})`);
  }
  if (img.width !== SIZE || img.height !== SIZE)
    throw badImage(i, `${img.width}x${img.height}, expected ${SIZE}x${SIZE}`);
  return { width: img.width, height: img.height, channels: 4, pixels: img.data };
}

export async function preprocess({ image }) {
  const n = image.data.length;
  const x = new Float32Array(n * SIZE * SIZE * 3);
  for (let i = 0; i < n; i++) {
    const buf = image.data[i];
    const isPng = PNG_SIGNATURE.every((v, k) => buf[k] === v);
    const isJpeg = buf[0] === 0xff && buf[1] === 0xd8;
    if (!isPng && !isJpeg) throw badImage(i, 'neither PNG nor JPEG');
    const img = isPng ? decodePng(buf, i) : await decodeJpeg(buf, i);
    for (let p = 0; p < SIZE * SIZE; p++) {
      for (let c = 0; c < 3; c++) {
        // Grey images repeat their one channel; alpha is dropped.
        const src = img.channels < 3 ? p * img.channels : p * img.channels + c;
        x[(i * SIZE * SIZE + p) * 3 + c] = img.pixels[src] / 255;
      }
    }
  }
  return { image: { dtype: 'f32', shape: [n, SIZE, SIZE, 3], data: x } };
}

export function postprocess({ logits }) {
  const [rows, k] = logits.shape;
  const labels = [];
  const scores = new Float32Array(rows * TOP);
  for (let r = 0; r < rows; r++) {
    const row = Array.from(logits.data.subarray(r * k, (r + 1) * k));
    const max = Math.max(...row);
    const e = row.map((v) => Math.exp(v - max));
    const sum = e.reduce((s, v) => s + v, 0);
    const order = e.map((_, j) => j).sort((a, b) => e[b] - e[a] || a - b);
    for (let t = 0; t < TOP; t++) {
      labels.push(new TextEncoder().encode(LABELS[order[t]]));
      scores[r * TOP + t] = e[order[t]] / sum;
    }
  }
  return {
    labels: { dtype: 'BYTES', shape: [rows, TOP], data: labels },
    scores: { dtype: 'f32', shape: [rows, TOP], data: scores },
  };
}
