/** Int16 PCM as the [-1, 1) floats that libsamplerate and Silero VAD take. */
export function int16ToFloat32(samples: Int16Array): Float32Array {
  const floats = new Float32Array(samples.length);
  for (let i = 0; i < samples.length; i++) floats[i] = samples[i] / 32768;
  return floats;
}

/** [-1, 1) floats back to Int16 PCM, clipped rather than wrapped where a filter overshoots. */
export function float32ToInt16(floats: Float32Array): Int16Array {
  const samples = new Int16Array(floats.length);
  for (let i = 0; i < floats.length; i++) samples[i] = Math.max(-32768, Math.min(32767, Math.round(floats[i] * 32768)));
  return samples;
}
