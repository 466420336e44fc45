/**
 * Preloaded into every server the bench starts (`--require`): answers `{type: "usage"}` on the
 * IPC channel with the process's memory after full garbage collections and its CPU time, so
 * gateway, baseline and peer are measured the same way from inside, without code of their own.
 */
const collect = (globalThis as { gc?: () => void }).gc;

process.on('message', (message: { type?: string }) => {
  if (message?.type !== 'usage') return;
  // Twice: the first pass can leave objects whose finalizers free more on the second.
  collect?.();
  collect?.();
  const memory = process.memoryUsage();
  const cpu = process.cpuUsage();
  process.send?.({ type: 'usage', rss: memory.rss, heapUsed: memory.heapUsed, external: memory.external, cpuMicros: cpu.user + cpu.system });
});
// The IPC channel must not keep a server alive after it has closed everything else.
process.channel?.unref();
