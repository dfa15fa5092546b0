// The `two-stage` meta model: `detector` scores the four 32x32 cells of a 64x64 image, this hook
// crops the two best cells, and `resnet` classifies each crop. Both sub-models run through the
// server's scheduler, with this request's deadline.
const CELL = 32;

export async function run({ image }, call) {
  const [n, height, width, channels] = image.shape;
  const { cell_scores: scores } = await call('detector', { image });
  const boxes = new Int32Array(n * 2 * 2);
  const crops = new Float32Array(n * 2 * CELL * CELL * channels);
  for (let i = 0; i < n; i++) {
    const s = scores.data.subarray(i * 4, i * 4 + 4);
    const best = [0, 1, 2, 3].sort((a, b) => s[b] - s[a] || a - b).slice(0, 2);
    best.forEach((cell, j) => {
      const y0 = (cell >> 1) * CELL;
      const x0 = (cell & 1) * CELL;
      boxes.set([y0, x0], (i * 2 + j) * 2);
      for (let y = 0; y < CELL; y++) {
        const from = ((i * height + y0 + y) * width + x0) * channels;
        crops.set(image.data.subarray(from, from + CELL * channels), ((i * 2 + j) * CELL + y) * CELL * channels);
      }
    });
  }
  const { logits } = await call('resnet', {
    image: { dtype: 'f32', shape: [n * 2, CELL, CELL, channels], data: crops },
  });
  const k = logits.shape[1];
  const labels = new Int32Array(n * 2);
  for (let r = 0; r < n * 2; r++) {
    const row = logits.data.subarray(r * k, (r + 1) * k);
    labels[r] = row.indexOf(Math.max(...row));
  }
  return {
    boxes: { dtype: 'i32', shape: [n, 2, 2], data: boxes },
    labels: { dtype: 'i32', shape: [n, 2], data: labels },
  };
}
