/**
 * Removes reasoning that Qwen3-family models put in `<think>...</think>`, even with thinking
 * off on some servers: closed blocks, a block left open at the end (a cut-off answer), and the
 * reasoning before a lone `</think>` (servers that strip the opening tag).
 */
export function stripThinkBlocks(text: string): string {
  let result = text.replace(/<think>[\s\S]*?<\/think>/gi, '');
  const lastClose = result.search(/<\/think>/i);
  if (lastClose >= 0) result = result.slice(result.toLowerCase().lastIndexOf('</think>') + '</think>'.length);
  const open = result.search(/<think>/i);
  if (open >= 0) result = result.slice(0, open);
  return result.trim();
}
