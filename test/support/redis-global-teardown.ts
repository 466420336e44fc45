/** Stops the private Redis the global setup may have started. */
export default async function tearDownRedis(): Promise<void> {
  globalThis.privateRedis?.kill();
}
