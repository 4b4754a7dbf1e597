// SHA-256 of a query's text, the key of an automatic persisted query (APQ).
// Browsers expose crypto.subtle only in secure contexts (https, localhost): a server
// reached over plain http by its name gets the small implementation below instead,
// written from FIPS 180-4, which the browser tests check against crypto.subtle.

const encoder = new TextEncoder();

/** The lowercase hex SHA-256 of `text`'s UTF-8 bytes. */
export async function sha256Hex(text) {
  const data = encoder.encode(text);
  if (globalThis.crypto?.subtle) {
    return hex(new Uint8Array(await crypto.subtle.digest("SHA-256", data)));
  }
  return sha256HexFallback(data);
}

function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// The constants are the first 32 bits of the fractional parts of the square roots (initial
// hash) and cube roots (round constants) of the first primes (FIPS 180-4, 4.2.2 and 5.3.3).
let constants = null;

function rootConstants() {
  if (constants) return constants;
  const frac = (x) => ((x - Math.floor(x)) * 2 ** 32) >>> 0;
  const initial = [];
  const rounds = new Uint32Array(64);
  for (let n = 2, found = 0; found < 64; n += 1) {
    let prime = true;
    for (let d = 2; d * d <= n; d += 1) if (n % d === 0) prime = false;
    if (!prime) continue;
    if (found < 8) initial.push(frac(Math.sqrt(n)));
    rounds[found] = frac(Math.cbrt(n));
    found += 1;
  }
  constants = { initial, rounds };
  return constants;
}

const ror = (x, n) => (x >>> n) | (x << (32 - n));

/** SHA-256 in plain JavaScript: the hex digest of `data` (a Uint8Array). */
export function sha256HexFallback(data) {
  const { initial, rounds } = rootConstants();
  // Padding: a 1 bit, zeros, then the length in bits as a 64-bit big-endian number.
  const blocks = Math.ceil((data.length + 9) / 64);
  const message = new Uint8Array(blocks * 64);
  message.set(data);
  message[data.length] = 0x80;
  const view = new DataView(message.buffer);
  const bits = data.length * 8;
  view.setUint32(message.length - 8, Math.floor(bits / 2 ** 32));
  view.setUint32(message.length - 4, bits >>> 0);

  const state = initial.slice();
  const w = new Uint32Array(64);
  for (let offset = 0; offset < message.length; offset += 64) {
    for (let i = 0; i < 16; i += 1) w[i] = view.getUint32(offset + i * 4);
    for (let i = 16; i < 64; i += 1) {
      const s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    let [a, b, c, d, e, f, g, k] = state;
    for (let i = 0; i < 64; i += 1) {
      const t1 = (k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + rounds[i] + w[i]) | 0;
      const t2 = ((ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      k = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    [a, b, c, d, e, f, g, k].forEach((value, i) => {
      state[i] = (state[i] + value) >>> 0;
    });
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  state.forEach((value, i) => outView.setUint32(i * 4, value));
  return hex(out);
}
