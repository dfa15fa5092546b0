/**
 * HPACK's Huffman code (RFC 7541 Appendix B), for decoding only: this gateway's encoder sends
 * literals raw. The code is canonical (codes of one length are consecutive, in symbol order, and
 * each length continues after the last code of the shorter one), so the table is stated as the
 * code length of each symbol, from which the codes follow.
 */

/** Code length in bits of symbols 0..255, one base-36 digit each; EOS (256) is 30 bits. */
const LENGTHS =
  'DNSSSSSSSOUSSUSSSSSSSSUSSSSSSSSS6AACD68BAA8B8666555666666678F6CAD67777777777777777777777878DJDE6F56565666577666567655677777FBEDSKMKKMMMNMNNNNNONOOMNONNNNLMNMNNOMLKMMNNLNMMOLMNNLLMLNMNNKMMMNMMNQQKJMNMPQQQRRQOPJLQRRQROLLQQSRRRKOKLMLLNMMPPOOQNQRQQRRRRRSRRRRRQ';
const EOS = 256;

/**
 * The decoder is a binary tree in two arrays: node n's children are child[2n] (bit 0) and
 * child[2n+1] (bit 1); a value >= 0 is an inner node, -1 - sym a leaf, and 0 at a non-root
 * position means no code goes there.
 */
const child = new Int32Array(2 * 512);

function build(): void {
  const len: number[] = [];
  for (let s = 0; s < 256; s++) len.push(parseInt(LENGTHS[s]!, 36));
  len.push(30);
  const order = [...len.keys()].sort((a, b) => len[a]! - len[b]! || a - b);
  let code = 0;
  let prevLen = len[order[0]!]!;
  let nodes = 1;
  for (const sym of order) {
    const l = len[sym]!;
    code <<= l - prevLen;
    prevLen = l;
    let n = 0;
    for (let b = l - 1; b >= 0; b--) {
      const slot = 2 * n + ((code >>> b) & 1);
      if (b === 0) child[slot] = -1 - sym;
      else {
        if (child[slot] === 0) child[slot] = nodes++;
        n = child[slot]!;
      }
    }
    code++;
  }
}
build();

/** Decodes a Huffman-coded string literal; throws on a code that is not in the table, EOS, or bad padding. */
export function huffmanDecode(src: Buffer, start: number, end: number): string {
  let out = '';
  let n = 0;
  /** Bits consumed since the last whole symbol, all ones so far (valid padding is up to 7 ones). */
  let tail = 0;
  let tailOnes = true;
  for (let i = start; i < end; i++) {
    const byte = src[i]!;
    for (let b = 7; b >= 0; b--) {
      const bit = (byte >>> b) & 1;
      const next = child[2 * n + bit]!;
      tail++;
      if (bit === 0) tailOnes = false;
      if (next < 0) {
        const sym = -1 - next;
        if (sym === EOS) throw new Error('Huffman string contains EOS');
        out += String.fromCharCode(sym);
        n = 0;
        tail = 0;
        tailOnes = true;
      } else if (next === 0) throw new Error('invalid Huffman code');
      else n = next;
    }
  }
  if (tail > 7 || !tailOnes) throw new Error('invalid Huffman padding');
  return out;
}
