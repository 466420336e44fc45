export interface LlmTurnOptions {
  warmupTurns: number;
  turns: number;
}

export async function benchLlmTurn(_options: LlmTurnOptions): Promise<void> {
  throw new Error('llm-turn: not written yet');
}
