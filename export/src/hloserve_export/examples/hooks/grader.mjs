// Hooks of the `grader` example (CORAL ordinal regression). The model answers K-1 cumulative
// logits, one per threshold: logit_k = P(grade > k) before the sigmoid. The grade is the number
// of leading thresholds passed: counting stops at the first one not passed (the early break), so
// a noisy later threshold can never raise a grade.

export function postprocess({ logits }) {
  const [rows, k] = logits.shape;
  const probs = new Float32Array(rows * k);
  const grade = new Int32Array(rows);
  for (let r = 0; r < rows; r++) {
    let passed = 0;
    let counting = true;
    for (let j = 0; j < k; j++) {
      const p = 1 / (1 + Math.exp(-logits.data[r * k + j]));
      probs[r * k + j] = p;
      if (counting && p > 0.5) passed++;
      else counting = false;
    }
    grade[r] = passed;
  }
  return {
    grade: { dtype: 'i32', shape: [rows], data: grade },
    probs: { dtype: 'f32', shape: [rows, k], data: probs },
  };
}
