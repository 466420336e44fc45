/** The protocol name LLM-gateway connections are counted under. */
export const LLM_PROTOCOL = 'llm';
