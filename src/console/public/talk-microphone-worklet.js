/**
 * Runs in the microphone's AudioContext, at the rate the page sends: gathers the 128-sample
 * blocks Web Audio hands it into frames of one Opus packet each, so the page gets one message a
 * packet rather than eight a packet, and the encoder never waits on a part of one.
 */
class PacketFramer extends AudioWorkletProcessor {
  /** @param {{processorOptions: {frameSamples: number}}} options */
  constructor({ processorOptions }) {
    super();
    this.frameSamples = processorOptions.frameSamples;
    this.frame = new Float32Array(this.frameSamples);
    this.filled = 0;
  }

  /** @param {Float32Array[][]} inputs */
  process([input]) {
    const samples = input[0];
    // No channel: the microphone's source is not connected (yet, or any more).
    if (!samples) return true;
    for (let offset = 0; offset < samples.length;) {
      const taken = Math.min(samples.length - offset, this.frameSamples - this.filled);
      this.frame.set(samples.subarray(offset, offset + taken), this.filled);
      this.filled += taken;
      offset += taken;
      if (this.filled === this.frameSamples) {
        // Transferred, not copied: the frame is the page's now, and this one starts a new one.
        this.port.postMessage(this.frame, [this.frame.buffer]);
        this.frame = new Float32Array(this.frameSamples);
        this.filled = 0;
      }
    }
    return true;
  }
}

registerProcessor('talk-packet-framer', PacketFramer);
